"""Provider implementations, one file per backend, built through ``knowhub.registry``."""
