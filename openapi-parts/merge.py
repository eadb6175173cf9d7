#!/usr/bin/env python3
"""One-time assembler: skeleton + area fragments -> openapi.yaml, adding the standard error
responses and the CSRF security rule by a fixed rule. Usage: merge.py OUT [part.yaml ...]"""
import sys, glob, os, yaml

here = os.path.dirname(os.path.abspath(__file__))
out = sys.argv[1]
parts = sys.argv[2:] or sorted(p for p in glob.glob(os.path.join(here, '*.yaml')) if not p.endswith('00-skeleton.yaml'))
doc = yaml.safe_load(open(os.path.join(here, '00-skeleton.yaml')))
doc['tags'] = doc.get('tags') or []
doc['paths'] = {}
MUT = {'post', 'put', 'patch', 'delete'}
errs = []
for p in parts:
    frag = yaml.safe_load(open(p)) or {}
    for t in frag.get('tags', []):
        if t['name'] not in [x['name'] for x in doc['tags']]:
            doc['tags'].append(t)
    for path, item in (frag.get('paths') or {}).items():
        tgt = doc['paths'].setdefault(path, {})
        for m, op in item.items():
            if m in tgt:
                errs.append(f'{p}: duplicate {m} {path}')
            tgt[m] = op
    for kind, items in (frag.get('components') or {}).items():
        dst = doc['components'].setdefault(kind, {})
        for name, v in (items or {}).items():
            if name in dst:
                errs.append(f'{p}: duplicate components.{kind}.{name}')
            dst[name] = v
if errs:
    sys.exit('\n'.join(errs))

def ref(name):
    return {'$ref': '#/components/responses/' + name}

opids = set()
for path, item in doc['paths'].items():
    shared_params = item.get('parameters', [])
    for m, op in item.items():
        if m not in ('get', 'post', 'put', 'patch', 'delete'):
            continue
        if op.get('operationId') in opids:
            sys.exit(f'duplicate operationId {op.get("operationId")}')
        opids.add(op.get('operationId'))
        agent_api = path.startswith('/agent-api/')
        if 'security' not in op:
            if agent_api:
                op['security'] = [{'agentKey': []}]
            elif m in MUT:
                op['security'] = [{'sessionCookie': [], 'csrfToken': []}]
        sec = op.get('security', doc['security'])
        params = [doc['components']['parameters'][pp['$ref'].rsplit('/', 1)[1]] if '$ref' in pp else pp
                  for pp in shared_params + op.get('parameters', [])]
        resp = op.setdefault('responses', {})
        def add(code, name):
            resp.setdefault(code, ref(name))
        if 'requestBody' in op:
            add('400', 'BadRequest'); add('413', 'PayloadTooLarge'); add('422', 'ValidationError')
        if params:
            add('422', 'ValidationError')
        if sec:
            add('401', 'Unauthenticated')
        if sec and not agent_api and m in MUT:
            add('403', 'Forbidden')
        if any(pp.get('in') == 'path' for pp in params if isinstance(pp, dict)):
            add('404', 'NotFound')
        add('500', 'Internal')
        add('501', 'NotImplemented')
        op['responses'] = dict(sorted(resp.items(), key=lambda kv: kv[0]))

with open(out, 'w') as f:
    yaml.safe_dump(doc, f, sort_keys=False, allow_unicode=True, width=100)
print(f'{out}: {sum(1 for i in doc["paths"].values() for m in i if m in ("get","post","put","patch","delete"))} operations')
