"""The output branch's format, written by `render` and read back by `load` and `live`.

`paths` is the branch's layout (every path dro writes there, built and parsed in one place),
`summary` writes the documents beside the manifests (decisions, kustomizations, README),
`status` writes and reads what a pass observed, and `statefiles` reads dro's own files back,
sealed and checked. Nothing here does I/O: the trees are path → bytes mappings.
"""
