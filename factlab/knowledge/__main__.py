"""python -m factlab.knowledge import --zotero path/to/zotero.sqlite --out outputs/knowledge

The commands and their options: factlab.knowledge.cli.
"""

from factlab.knowledge.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
