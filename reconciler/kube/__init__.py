"""Kubernetes knowledge, shared by the stages that need it.

`client` is the only module that imports the official `kubernetes` package; the pure stages
never import it. The rest is Kubernetes' own rules, without I/O: `quantity` and `quantities`
(the quantity grammar), `demand` (what a replica asks for), `health` (Argo CD's health states),
`inventory` (what dro applied and may prune), `movehooks` (data-sync hooks) and `secrets`
(a Secret's values, never shown).
"""
