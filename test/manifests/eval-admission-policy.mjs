// Evaluates a ValidatingAdmissionPolicy (admissionregistration.k8s.io/v1, as JSON) on admission
// requests with a real CEL evaluator (npm @bufbuild/cel), the way the API server's
// pkg/admission/plugin/policy/validating does: matchConstraints.resourceRules select the request,
// every matchCondition must be true for the policy to apply, variables are bound under
// `variables`, and each validation must be true. An expression that fails to evaluate counts as
// failurePolicy says (Fail: the request is refused), so a broken expression shows as a refusal.
//
// Usage: node eval-admission-policy.mjs CEL_MODULE_DIR < {"policy": {...}, "requests": [...]}
// Each request: {"request": AdmissionRequest, "object": ..., "oldObject": ...}.
// Prints one JSON line per request: {"applies": bool, "allowed": bool, "message": "..."}.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";

const require = createRequire(path.join(process.argv[2], "noop.js"));
const cel = require("@bufbuild/cel");

// A syntax error throws, an evaluation error is returned: both are "could not evaluate".
function run(expression, env) {
    try {
        return cel.run(expression, env);
    } catch (e) {
        return e instanceof Error ? e : new Error(String(e));
    }
}

// JSON objects become CEL maps, so has(a.b) and a.b behave as on the API server's objects.
const toCel = (v) =>
    Array.isArray(v)
        ? v.map(toCel)
        : v !== null && typeof v === "object"
          ? new Map(Object.entries(v).map(([k, x]) => [k, toCel(x)]))
          : v;

const failed = (v) => v instanceof Error || cel.isCelError(v);

function ruleMatches(rule, req) {
    const res = req.resource;
    const name = req.subResource ? `${res.resource}/${req.subResource}` : res.resource;
    const any = (list, x) => list.includes("*") || list.includes(x);
    return any(rule.apiGroups, res.group) && any(rule.apiVersions, res.version) &&
        any(rule.resources, name) && any(rule.operations, req.operation);
}

function evaluate(policy, input) {
    const spec = policy.spec;
    const req = input.request;
    if (!spec.matchConstraints.resourceRules.some((r) => ruleMatches(r, req)))
        return { applies: false, allowed: true, message: "no resource rule matches" };
    const refuse = spec.failurePolicy !== "Ignore";
    const env = {
        request: toCel(req),
        object: toCel(input.object ?? null),
        oldObject: toCel(input.oldObject ?? null),
        params: null,
    };
    for (const c of spec.matchConditions ?? []) {
        const v = run(c.expression, env);
        if (failed(v))
            return { applies: true, allowed: !refuse, message: `matchCondition ${c.name}: ${v.message}` };
        if (v !== true) return { applies: false, allowed: true, message: `matchCondition ${c.name} false` };
    }
    const variables = new Map();
    for (const x of spec.variables ?? []) {
        const v = run(x.expression, { ...env, variables });
        if (failed(v))
            return { applies: true, allowed: !refuse, message: `variable ${x.name}: ${v.message}` };
        variables.set(x.name, v);
    }
    for (const val of spec.validations) {
        const v = run(val.expression, { ...env, variables });
        if (failed(v))
            return { applies: true, allowed: !refuse, message: `evaluation error: ${v.message}` };
        if (v !== true) {
            let message = val.message ?? `failed expression: ${val.expression}`;
            if (val.messageExpression) {
                const m = run(val.messageExpression, { ...env, variables });
                if (typeof m === "string") message = m;
            }
            return { applies: true, allowed: false, message };
        }
    }
    return { applies: true, allowed: true, message: "" };
}

const input = JSON.parse(readFileSync(0, "utf8"));
for (const r of input.requests) console.log(JSON.stringify(evaluate(input.policy, r)));
