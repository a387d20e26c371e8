// The first module the entry point evaluates: on a Node.js older than package.json's
// `engines` (a global install run by the system's Node), cfh's dependencies fail at import
// with a stack trace. ES modules evaluate in import order, so this runs before any of them
// and says what is wrong in cfh's one error style instead.
const [major = 0, minor = 0] = process.versions.node.split('.').map(Number);
if (major < 22 || (major === 22 && minor < 12)) {
  process.stderr.write(
    `cfh: Node.js 22.12 or later is needed, this is ${process.version} (${process.execPath}); put a newer node first on PATH (make node installs one into .tools/node)\n`,
  );
  process.exit(125);
}
