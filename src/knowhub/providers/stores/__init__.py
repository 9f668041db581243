"""Store backends: the embedded SQLite store is the default and the source of truth."""
