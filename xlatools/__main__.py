from xlatools.cli import entry

entry()
