#!/usr/bin/env python3
# Loads a GGUF (pagoda convert's output, or llama.cpp's own) in llama-server and checks its greedy tokens against
# ../shared/golden/arch/<arch>-greedy.jsonl up to the first near-tie: does llama.cpp run pagoda's conversion as it
# runs its own? Usage: llama_server_greedy_check.py ARCH MODEL.gguf PATH/TO/llama-server ../shared
import json,urllib.error,subprocess,sys,time,urllib.request,os
if len(sys.argv)!=5: sys.exit("usage: llama_server_greedy_check.py ARCH MODEL.gguf LLAMA_SERVER SHARED_DIR")
arch=sys.argv[1]; model=sys.argv[2]; server=sys.argv[3]; shared=sys.argv[4]; port=str(18080+hash(model)%500)
env=dict(os.environ,LD_LIBRARY_PATH=os.path.dirname(os.path.abspath(server)))
p=subprocess.Popen([server,'-m',model,'--port',port,'-t','2','-c','512','-np','1'],stdout=subprocess.DEVNULL,stderr=subprocess.DEVNULL,env=env)
try:
  for _ in range(100):
    try: urllib.request.urlopen(f'http://127.0.0.1:{port}/health'); break
    except Exception: time.sleep(0.1)
  agree=total=0
  for line in open(f'{shared}/golden/arch/{arch}-greedy.jsonl'):
    g=json.loads(line)
    req=json.dumps({"prompt":g["prompt_ids"],"n_predict":16,"temperature":0,"return_tokens":True,"cache_prompt":False,"stream":True,"samplers":["top_k"],"top_k":1}).encode()
    resp=urllib.request.urlopen(urllib.request.Request(f'http://127.0.0.1:{port}/completion',req,{'Content-Type':'application/json'}))
    toks=[]
    for raw in resp:
      raw=raw.strip()
      if raw.startswith(b'data: '):
        ev=json.loads(raw[6:]); toks+=ev.get("tokens",[])
    r={"tokens":toks}
    want=[]
    for s in g["steps"][:16]:
      if s["top"][0][1]-s["top"][1][1]<0.02: break
      want.append(s["top"][0][0])
    # llama-server's stream stops at the first token that leaves the text inside a UTF-8 sequence (random weights
    # often pick byte tokens): compare the tokens it did stream.
    n=min(len(want),len(r["tokens"])); got=r["tokens"][:n]
    total+=1; agree+= got==want[:n]; compared=globals().get('compared',0)+n; globals()['compared']=compared
    if got!=want and os.environ.get("V"): print(want, r["tokens"])
  print(f"{arch}: llama-server on {os.path.basename(model)}: {agree}/{total} prompts give the golden greedy tokens ({compared} tokens compared)")
finally: p.terminate(); p.wait()
