"""The manifest (``anvil.yaml``): its model, schema, parsing, policy, auth and application to AIR.

* :mod:`.model` - the parsed manifest's value objects;
* :mod:`.schema` - the JSON schema every manifest is checked against;
* :mod:`.parse` - :func:`~.parse.load_manifest`: file -> model and diagnostics;
* :mod:`.policy` - the tighten-only rules and the approval policy digest;
* :mod:`.auth` - the manifest's auth section resolved against the spec's schemes;
* :mod:`.apply` - one operation's overrides applied to its AIR operation.
"""
