"""The query pipeline: validate → tokenize → dense ‖ lexical → fuse → cut."""
