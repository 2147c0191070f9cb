"""bundle stage: AIR -> compiler-owned files -> one transactional install (original-core §4).

``emit.emit_bundle`` projects a document into ``{path: bytes}`` (pure), ``writer`` (``install_bundle``, or
``BundleInstall`` fed as the files are emitted) is the only code that writes a bundle directory,
``hash.bundle_hash`` binds proof records to its bytes and ``read.read_bundle`` loads it back. Import the
submodules directly; this package re-exports nothing so that importing ``anvil.bundle.read`` stays cheap
for the runtime.
"""

__all__: list[str] = []
