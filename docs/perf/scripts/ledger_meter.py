# What one ledger write costs the door: jobs meter x2000 on one job (one call each) against a
# running server, beside jobs list x500 on the same connection as the in-run baseline.
# Usage: python3 ledger_meter.py  (a release server on 127.0.0.1:8799, namespace demo, a driver
# key in /tmp/ledger-bench/drv.key: see docs/perf/2026-12-07.md for the set-up commands).
import http.client, json, time, statistics, sys
key = open('/tmp/ledger-bench/drv.key').read().strip().split()[-1]
conn = http.client.HTTPConnection('127.0.0.1', 8799)
def call(tool, args):
    body = json.dumps({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":tool,"arguments":args}})
    conn.request('POST','/ops/mcp',body,{'Authorization':'Bearer '+key,'Content-Type':'application/json','Accept':'application/json, text/event-stream'})
    r = conn.getresponse(); t = r.read().decode()
    if t.lstrip().startswith('{'): rpc = json.loads(t)
    else: rpc = json.loads([l[5:] for l in t.splitlines() if l.startswith('data:')][0])
    return json.loads(rpc['result']['content'][0]['text'])
post = call('jobs', {"action":"post","namespace":"demo","title":"Bench "+str(time.time()),"body":"Bench.\n"})
job = post['job']['id']
print(call('jobs', {"action":"claim","namespace":"demo"})['ok'])
def one(i):
    c = {"call_id": "call_%08d_%s" % (i, job[-6:]), "model":"claude-sonnet-5","session":"s1","input_tokens":1200,"output_tokens":300,
         "cache_write_tokens":0,"cache_read_tokens":0,"cost_usd":0.0081,"priced":"table","ended":"completed",
         "started_at":"2026-12-07T01:00:00.000Z","ended_at":"2026-12-07T01:00:01.000Z"}
    return call('jobs', {"action":"meter","id":job,"namespace":"demo","calls":[c]})
for i in range(50): one(i)
lat=[]
for i in range(50, 2050):
    t=time.perf_counter(); out=one(i); lat.append((time.perf_counter()-t)*1000)
    assert out['ok'] and out['recorded']==1, out
lat.sort()
print("meter x2000 (ledger of %d rows at the end): p50 %.3f ms, p99 %.3f ms, max %.3f ms" % (2050, lat[1000], lat[1980], lat[-1]))
# A read: a list call as the in-run baseline (same transport, no write)
base=[]
for i in range(500):
    t=time.perf_counter(); call('jobs', {"action":"list","namespace":"demo"}); base.append((time.perf_counter()-t)*1000)
base.sort()
print("baseline jobs list x500: p50 %.3f ms, p99 %.3f ms" % (base[250], base[495]))
t=time.perf_counter(); g=call('jobs', {"action":"get","id":job,"namespace":"demo"}); print("get with %d calls: %.1f ms, cost %s" % (g['spend']['calls'], (time.perf_counter()-t)*1000, g['spend']['cost_usd']))
