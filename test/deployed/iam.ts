/**
 * The identity policies a template attaches to a role, evaluated as IAM would for the calls the local cloud
 * sees: an action is allowed when an Allow statement matches it (action and resource wildcards `*` / `?`) and
 * no Deny does. Conditions are not evaluated (the stack uses none on the calls checked here).
 */
import type { Json, Resolver } from './intrinsics.js';

interface Statement {
  Effect: 'Allow' | 'Deny';
  Action: string[];
  Resource: string[];
}

const wildcard = (pattern: string): RegExp =>
  new RegExp(
    `^${pattern
      .replace(/[.+^${}()|[\]\\]/g, '\\$&')
      .replace(/\*/g, '.*')
      .replace(/\?/g, '.')}$`,
    'i',
  );

const list = (v: Json): string[] => (Array.isArray(v) ? v : [v]).map(String);

export class RolePolicies {
  readonly #statements: Statement[] = [];

  constructor(
    readonly roleLogicalId: string,
    resolver: Resolver,
  ) {
    const attachedTo = (roles: Json): boolean =>
      (roles ?? []).some((r: Json) => r?.Ref === roleLogicalId);
    for (const [, policy] of resolver.ofType('AWS::IAM::Policy')) {
      if (!attachedTo(policy.Properties?.Roles)) continue;
      this.#add(resolver.resolve(policy.Properties?.PolicyDocument));
    }
    const role = resolver.resource(roleLogicalId);
    for (const inline of role.Properties?.Policies ?? [])
      this.#add(resolver.resolve(inline.PolicyDocument));
  }

  #add(document: Json): void {
    for (const s of document?.Statement ?? []) {
      this.#statements.push({
        Effect: s.Effect,
        Action: list(s.Action),
        Resource: list(s.Resource ?? '*'),
      });
    }
  }

  allows(action: string, resource: string): boolean {
    const matches = (s: Statement) =>
      s.Action.some((a) => wildcard(a).test(action)) &&
      s.Resource.some((r) => wildcard(r).test(resource));
    if (this.#statements.some((s) => s.Effect === 'Deny' && matches(s))) return false;
    return this.#statements.some((s) => s.Effect === 'Allow' && matches(s));
  }
}

/** What IAM would answer: AccessDenied, naming the role, action and resource. */
export class AccessDeniedError extends Error {
  override name = 'AccessDenied';
  readonly $metadata = { httpStatusCode: 403 };
  constructor(principal: string, action: string, resource: string) {
    super(`User: ${principal} is not authorized to perform: ${action} on resource: ${resource}`);
  }
}
