"""Maps the card's top-level folders into the one importable package `lossgate`.

Inspect resolves `lossgate/<suite>` through an entry point whose name must be the import name,
so `tasks/` installs as `lossgate.tasks` and `sandboxes/` as `lossgate.sandboxes`. Subpackages
are discovered here so a new suite needs no packaging edit; folders that hold only data (a
Dockerfile, a suite's JSON) are listed too, because setuptools warns about, and may one day drop,
package data in a folder that is not a listed package.
"""

from pathlib import Path

from setuptools import setup

ROOTS = {"lossgate": "lossgate", "lossgate.tasks": "tasks", "lossgate.sandboxes": "sandboxes"}


def discover() -> list[str]:
    found = []
    for name, folder in ROOTS.items():
        root = Path(folder)
        for directory in sorted([root, *(d for d in root.rglob("*") if d.is_dir())]):
            rel = directory.relative_to(root).parts
            if any(part.startswith((".", "_")) for part in rel):
                continue  # __pycache__, hidden folders
            found.append(".".join((name, *rel)))
    return found


setup(packages=discover(), package_dir=ROOTS)
