// With whose authority a tree is read and written: cfh's own, or (src/engine/
// write-authority.ts) the tree owner's, for cfh as root working in a user's workspace.
export interface Authority {
  /** Runs `fn` as the one who writes the host tree. */
  asWriter<T>(fn: () => Promise<T>): Promise<T>;
  /** Runs `fn` as cfh itself (the run's evidence: blobs, the event log). */
  asSelf<T>(fn: () => Promise<T>): Promise<T>;
}

export const OWN_AUTHORITY: Authority = {
  asWriter: (fn) => fn(),
  asSelf: (fn) => fn(),
};
