// A profile's `model` section: the route its agent runs talk to (AH-INV-2, AH-INV-5),
// chosen once and recorded. The provider, the endpoint, the model, the wire format, where the
// credential is read (by reference: an environment variable's name, or `none` for a local
// server), the window when the endpoint cannot say, optional prices. A layer's section
// replaces its base's whole (profile-loader.ts): fields of another provider's route never
// carry over into this one.
import { z } from 'zod';

export const MODEL_PROVIDERS = ['anthropic', 'openai-compatible', 'scripted'] as const;
export const ModelProvider = z.enum(MODEL_PROVIDERS);
export type ModelProvider = z.infer<typeof ModelProvider>;

export const ModelWire = z.enum(['chat', 'responses']);
export type ModelWire = z.infer<typeof ModelWire>;

const envName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'not a valid environment name');

/** `none`: the endpoint takes no credential; `{fromEnv: NAME}`: cfh's own variable NAME. */
export const ModelCredential = z.union([z.literal('none'), z.strictObject({ fromEnv: envName })]);
export type ModelCredential = z.infer<typeof ModelCredential>;

/** An endpoint's base URL: http or https, no credentials in it, no query or fragment. */
export const BaseUrl = z
  .url({ protocol: /^https?$/, error: 'baseUrl must be an http or https URL' })
  .refine((text) => {
    const url = new URL(text);
    return url.username === '' && url.password === '' && url.search === '' && url.hash === '';
  }, 'baseUrl must not carry a user, password, query or fragment (the credential is `credential`)');

export const ModelPricing = z.strictObject({
  inputPerMTok: z.number().nonnegative(),
  outputPerMTok: z.number().nonnegative(),
});

export const ModelSection = z
  .strictObject({
    provider: ModelProvider,
    baseUrl: BaseUrl.optional(),
    model: z.string().min(1).max(200).optional(),
    /** Only for openai-compatible; `chat` (Chat Completions) when absent. */
    wire: ModelWire.optional(),
    credential: ModelCredential.optional(),
    contextWindow: z.number().int().positive().optional(),
    pricing: ModelPricing.optional(),
  })
  .superRefine((section, ctx) => {
    if (section.wire !== undefined && section.provider !== 'openai-compatible')
      ctx.addIssue({
        code: 'custom',
        path: ['wire'],
        message: `wire: only for provider openai-compatible, not ${section.provider}`,
      });
    if (section.provider === 'anthropic' && section.credential === 'none')
      ctx.addIssue({
        code: 'custom',
        path: ['credential'],
        message: 'credential: the anthropic provider needs one ({fromEnv: NAME})',
      });
    if (section.provider === 'scripted')
      for (const field of ['baseUrl', 'model', 'credential', 'pricing'] as const)
        if (section[field] !== undefined)
          ctx.addIssue({
            code: 'custom',
            path: [field],
            message: `${field}: the scripted provider has no endpoint, model, credential or price`,
          });
  });
export type ModelSection = z.infer<typeof ModelSection>;
