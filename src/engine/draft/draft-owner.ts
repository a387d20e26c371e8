// The owner record of a draft copy's directory: the run's owner labels (sandbox/owner.ts),
// written by the run that makes the copy and read by `cfh reap` (draft-reap.ts).
export const DRAFT_OWNER_FILE = 'owner.json';
