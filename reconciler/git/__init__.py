"""Git, through libgit2: `gitrepo` is the only `pygit2` import, `packfile` writes new objects.

Called by `load` (the source at a ref), `commit` (the output branch) and `review` (both sides
of a pull request). The pure stages never import it.
"""
