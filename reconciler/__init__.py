"""dro: a declarative GitOps reconciler for multi-cluster placement.

The pipeline is the folder listing: load → validate → schedule → render → commit (→ apply).
`pipeline.py` reads the stages in order; each stage is one module with one public verb.
"""
