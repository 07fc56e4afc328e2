import * as z from 'zod';
type H<I extends z.ZodType, R> = (input: z.output<I>) => R | Promise<R>;
declare function defE<I extends z.ZodType, O extends z.ZodType>(d: { input: I; output: O }, h: { invoke?: H<I, z.input<O>> }): void;
defE({ input: z.object({ a: z.number() }), output: z.object({ s: z.enum(['x', 'y']) }) }, { invoke: () => ({ s: 'x' }) });
defE({ input: z.object({ a: z.number() }), output: z.object({ s: z.enum(['x', 'y']) }) }, { invoke: async (i) => ({ s: i.a > 1 ? 'x' : 'y' }) });
defE({ input: z.object({ a: z.number() }), output: z.object({ s: z.enum(['x', 'y']) }) }, { invoke: async (i) => ({ s: 'z' }) });
