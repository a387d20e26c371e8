// The published form of a profile file (docs/schema/profile.json, draft 2020-12), generated
// from the zod ProfileFile so what an operator writes (the `cfc:` section, labels and
// clearances on the workspace, mounts, destinations and host tools) is documented by the
// definition cfh parses with. `npm run schemas` writes it; unit/profile-json-schema.test.ts
// fails when the file and the definition disagree.
import { z } from 'zod';
import { ProfileFile } from './profile-schema.js';

export function profileJsonSchema(): Record<string, unknown> {
  return {
    ...z.toJSONSchema(ProfileFile, { io: 'input', unrepresentable: 'any' }),
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    $id: 'cfh:cfh.profile/1',
    title: 'A cfh profile file (YAML or JSON); `extends` fills what it leaves out',
  };
}
