"""Knowledge-base versions: a collection answered from one of its builds at a time.

:mod:`.record` is the record itself (below the App: every request reads it);
:mod:`.build`, :mod:`.gate` and :mod:`.switch` build a version beside the active one, gate
it on golden questions and switch between versions (above the App: they drive it).
"""
