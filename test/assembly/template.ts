/**
 * Reads a synthesized cloud assembly the way CloudFormation would deploy it,
 * for the assembly test: the stacks of one environment, their resources, and
 * the intrinsic functions (`Ref`, `Fn::GetAtt`, `Fn::ImportValue`,
 * `Fn::Join`, `Fn::Select`, `Fn::Split`, `Fn::Sub`, the pseudo parameters)
 * resolved against the physical resources the test "deployed" on the local
 * emulators. Nothing here knows the AIP stacks: a resource's physical values
 * come from {@link PhysicalIds}, filled by the deployment
 * (test/assembly/deployment.ts).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

export const ACCOUNT_ID = '000000000000';
export const REGION = 'us-east-1';
export const PARTITION = 'aws';

export interface CfnResource {
  readonly Type: string;
  readonly Properties?: Record<string, unknown>;
  readonly DependsOn?: string | string[];
}

export interface CfnTemplate {
  readonly Resources: Record<string, CfnResource>;
  readonly Outputs?: Record<string, { readonly Value: unknown; readonly Export?: { readonly Name: string } }>;
}

export interface StackArtifact {
  readonly name: string;
  readonly template: CfnTemplate;
}

/** The physical values of one resource: `Ref` and its attributes. */
export interface Physical {
  readonly ref: string;
  readonly attributes?: Readonly<Record<string, string>>;
}

/** Physical values by stack name, then logical ID. */
export type PhysicalIds = Map<string, Map<string, Physical>>;

/** The stacks of the assembly in `dir` whose names start with `prefix` (`Aip-assembly-`), in manifest order. */
export function readStacks(dir: string, prefix: string): StackArtifact[] {
  const manifest = JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8')) as {
    artifacts: Record<string, { type: string; properties?: { templateFile?: string } }>;
  };
  const out: StackArtifact[] = [];
  for (const [name, artifact] of Object.entries(manifest.artifacts)) {
    if (artifact.type !== 'aws:cloudformation:stack' || !name.startsWith(prefix)) continue;
    // `Aip-assembly-` must not match `Aip-assembly-remote-`: the rest of the name is one word.
    if (name.slice(prefix.length).includes('-')) continue;
    const file = artifact.properties?.templateFile as string;
    out.push({ name, template: JSON.parse(readFileSync(join(dir, file), 'utf8')) as CfnTemplate });
  }
  return out;
}

/** Resources of a type across the stacks: `[stack, logicalId, resource]`. */
export function resourcesOfType(stacks: readonly StackArtifact[], type: string): [StackArtifact, string, CfnResource][] {
  return stacks.flatMap((s) =>
    Object.entries(s.template.Resources).flatMap(([id, r]) => (r.Type === type ? [[s, id, r] as [StackArtifact, string, CfnResource]] : [])),
  );
}

const PSEUDO: Record<string, string> = {
  'AWS::Partition': PARTITION,
  'AWS::Region': REGION,
  'AWS::AccountId': ACCOUNT_ID,
  'AWS::URLSuffix': 'amazonaws.com',
  'AWS::NoValue': '',
};

export class UnresolvedError extends Error {}

/** Resolves intrinsic functions against the deployed physical values. */
export class Resolver {
  constructor(
    private readonly stacks: readonly StackArtifact[],
    private readonly physical: PhysicalIds,
  ) {}

  private stack(name: string): StackArtifact {
    const s = this.stacks.find((x) => x.name === name);
    if (s === undefined) throw new UnresolvedError(`no stack ${name}`);
    return s;
  }

  private ref(stackName: string, id: string): string {
    if (id in PSEUDO) return PSEUDO[id] as string;
    if (id === 'AWS::StackName') return stackName;
    const p = this.physical.get(stackName)?.get(id);
    if (p === undefined) throw new UnresolvedError(`Ref ${id} in ${stackName}: not deployed`);
    return p.ref;
  }

  private getAtt(stackName: string, id: string, attribute: string): string {
    const p = this.physical.get(stackName)?.get(id);
    const value = p?.attributes?.[attribute];
    if (value === undefined) throw new UnresolvedError(`Fn::GetAtt ${id}.${attribute} in ${stackName}: not deployed`);
    return value;
  }

  private importValue(name: string): unknown {
    for (const s of this.stacks) {
      for (const output of Object.values(s.template.Outputs ?? {})) {
        if (output.Export?.Name === name) return this.resolve(s.name, output.Value);
      }
    }
    throw new UnresolvedError(`Fn::ImportValue ${name}: no stack exports it`);
  }

  /** The value of `value` (any JSON) in stack `stackName`, every intrinsic resolved. */
  resolve(stackName: string, value: unknown): unknown {
    if (Array.isArray(value)) return value.map((v) => this.resolve(stackName, v));
    if (value === null || typeof value !== 'object') return value;
    const entries = Object.entries(value as Record<string, unknown>);
    if (entries.length === 1) {
      const [fn, arg] = entries[0] as [string, unknown];
      switch (fn) {
        case 'Ref':
          return this.ref(stackName, arg as string);
        case 'Fn::GetAtt': {
          const [id, attribute] = Array.isArray(arg) ? (arg as [string, string]) : ((arg as string).split('.', 2) as [string, string]);
          return this.getAtt(stackName, id, attribute);
        }
        case 'Fn::ImportValue':
          return this.importValue(this.resolve(stackName, arg) as string);
        case 'Fn::Join': {
          const [sep, parts] = arg as [string, unknown[]];
          return (this.resolve(stackName, parts) as unknown[]).map(String).join(sep);
        }
        case 'Fn::Select': {
          const [index, list] = arg as [unknown, unknown];
          return (this.resolve(stackName, list) as unknown[])[Number(this.resolve(stackName, index))];
        }
        case 'Fn::Split': {
          const [sep, source] = arg as [string, unknown];
          return String(this.resolve(stackName, source)).split(sep);
        }
        case 'Fn::Sub': {
          const [text, vars] = (Array.isArray(arg) ? arg : [arg, {}]) as [string, Record<string, unknown>];
          return text.replace(/\$\{([^}]+)\}/g, (_m, name: string) => {
            if (name in vars) return String(this.resolve(stackName, vars[name]));
            const [id, attribute] = name.split('.', 2) as [string, string | undefined];
            return attribute === undefined ? this.ref(stackName, id) : this.getAtt(stackName, id, attribute);
          });
        }
        default:
          if (fn.startsWith('Fn::') || fn === 'Condition') throw new UnresolvedError(`${fn} is not supported by the assembly test's resolver`);
      }
    }
    return Object.fromEntries(entries.map(([k, v]) => [k, this.resolve(stackName, v)]));
  }

  /** Resolved, and a string. */
  string(stackName: string, value: unknown): string {
    const out = this.resolve(stackName, value);
    if (typeof out !== 'string') throw new UnresolvedError(`expected a string, got ${JSON.stringify(out)}`);
    return out;
  }

  template(stackName: string): CfnTemplate {
    return this.stack(stackName).template;
  }
}
