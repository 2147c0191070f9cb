// Launcher for @firestore-emulator/server 0.3.15 that closes the gaps a ledger needs:
//  * update_time preconditions on update/delete (FAILED_PRECONDITION when stale)
//  * all preconditions of a Commit checked before any write is applied (atomic commit)
//  * optimistic transaction isolation: a tx whose read docs changed before commit -> ABORTED
//    (the Python client then retries the transactional function, as against real Firestore)
//  * BatchGetDocuments honours mask.field_paths (get(field_paths=...))
//  * commit times strictly increase (ms resolution), so update_time works as a version
// Usage: node launch-strict.js [port]   (default 8080, binds 127.0.0.1, in-memory state)
const grpc = require("@grpc/grpc-js");
const { FirestoreServer, TimestampFromDate } = require("@firestore-emulator/server");
const { BatchGetDocumentsResponse, BeginTransactionResponse } =
  require("@firestore-emulator/proto/dist/google/firestore/v1/firestore");

const port = Number(process.argv[2] || process.env.PORT || 8080);
const fsrv = new FirestoreServer();
const state = fsrv.state;
const g = fsrv.server;                       // the grpc-js Server (private in TS only)
const P = "/google.firestore.v1.Firestore/";
function replace(method, make) {
  const h = g.handlers.get(P + method);
  g.unregister(P + method);
  g.register(P + method, make(h.func), h.serialize, h.deserialize, h.type);
}
const err = (code, details) => Object.assign(new Error(details), { code, details });

const version = (doc) => (doc.metadata.hasExist ? doc.metadata.updatedAt.getTime() : -1);
const tsMs = (ts) => Number(ts.seconds) * 1000 + Math.floor(Number(ts.nanos) / 1e6);
const txReads = new Map();                   // tx id (hex) -> Map(docPath -> version)
let txSeq = 0, lastCommitMs = 0;
function newTx() {
  const id = Buffer.alloc(12); id.writeUInt32BE(process.pid, 0); id.writeUInt32BE(++txSeq, 8);
  txReads.set(id.toString("hex"), new Map()); return id;
}

replace("BeginTransaction", () => (call, cb) =>
  cb(null, BeginTransactionResponse.fromObject({ transaction: newTx() })));

replace("Rollback", (orig) => (call, cb) => {
  txReads.delete(Buffer.from(call.request.transaction).toString("hex")); orig(call, cb);
});

function applyMask(obj, paths) {
  if (!paths || paths.length === 0) return obj;
  const out = {};
  for (const p of paths) {
    const parts = p.split(".");
    let src = obj.fields, dst = out;
    for (let i = 0; i < parts.length && src && parts[i] in src; i++) {
      const v = src[parts[i]];
      if (i === parts.length - 1) { dst[parts[i]] = v; break; }
      if (!v.map_value) break;
      dst[parts[i]] ??= { map_value: { fields: {} } };
      dst = dst[parts[i]].map_value.fields; src = v.map_value.fields || {};
    }
  }
  return { ...obj, fields: out };
}

replace("BatchGetDocuments", () => (call) => {
  const req = call.request, readTime = TimestampFromDate(new Date());
  let tx = req.transaction && req.transaction.length ? Buffer.from(req.transaction) : null;
  if (req.has_new_transaction) { tx = newTx(); call.write(BatchGetDocumentsResponse.fromObject({ transaction: tx })); }
  const reads = tx ? txReads.get(tx.toString("hex")) : null;
  const mask = req.has_mask ? req.mask.field_paths : null;
  for (const path of req.documents) {
    const doc = state.getDocument(path);
    if (reads && !reads.has(path)) reads.set(path, version(doc));
    call.write(BatchGetDocumentsResponse.fromObject(doc.metadata.hasExist
      ? { found: applyMask(doc.toV1DocumentObject(), mask), read_time: readTime }
      : { missing: path, read_time: readTime }));
  }
  call.end();
});

replace("Commit", (orig) => (call, cb) => {
  const req = call.request;
  if (req.transaction && req.transaction.length) {
    const key = Buffer.from(req.transaction).toString("hex");
    const reads = txReads.get(key); txReads.delete(key);
    if (!reads) return cb(err(grpc.status.INVALID_ARGUMENT, "unknown or expired transaction"));
    for (const [path, ver] of reads)
      if (version(state.getDocument(path)) !== ver)
        return cb(err(grpc.status.ABORTED, `transaction aborted: ${path} changed since it was read`));
  }
  for (const w of req.writes) {               // validate every precondition first
    if (!w.has_current_document) continue;
    const path = w.has_delete ? w.delete : w.update.name;
    const doc = state.getDocument(path), exists = doc.metadata.hasExist;
    const cd = w.current_document;
    if (cd.has_exists && cd.exists && !exists) return cb(err(grpc.status.NOT_FOUND, `no entity to update: ${path}`));
    if (cd.has_exists && !cd.exists && exists) return cb(err(grpc.status.ALREADY_EXISTS, `entity already exists: ${path}`));
    if (cd.has_update_time && (!exists || version(doc) !== tsMs(cd.update_time)))
      return cb(err(grpc.status.FAILED_PRECONDITION, `the stored version (${version(doc)}) does not match the required base version (${tsMs(cd.update_time)}) for ${path}`));
  }
  while (Date.now() <= lastCommitMs) { /* spin < 1 ms so commit times are unique */ }
  lastCommitMs = Date.now();
  orig(call, cb);
});

g.bindAsync(`127.0.0.1:${port}`, grpc.ServerCredentials.createInsecure(), (e) => {
  if (e) { console.error(e); process.exit(1); }
  console.log(`firestore-emulator (strict launcher) listening on 127.0.0.1:${port}`);
});
for (const sig of ["SIGINT", "SIGTERM"]) process.on(sig, () => { g.forceShutdown(); process.exit(0); });
