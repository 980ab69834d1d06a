"""The workbench loop (loop.py): evaluate -> attribute -> optimize the most-blamed stage -> re-evaluate, in rounds."""
