"""The web view: read-only pages of the fleet that `dro run` serves at `/`, beside the REST API.

Everything shown comes from the output branch (decisions, status files and their history, the
rendered tree, the branch's commits), never from a cluster: `branchdata` reads it once per tip
(`branchfiles` reads each file), `views` picks what each page shows, `charts` draws the water
levels as inline SVG, `pages` is the Starlette routes and the Jinja2 templates (`templates/`,
shipped in the package), and `access` checks the REST API's tokens.

Called by `cli.run`.
"""
