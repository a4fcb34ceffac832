import json, subprocess, os, re, collections
OUT='/work/cppdata'
def git(gd, *a):
    return subprocess.run(['git','--git-dir='+gd,*a],capture_output=True,check=True).stdout
def ls(gd, c):
    return git(gd,'ls-tree','-r','--name-only',c).decode().split('\n')
def show(gd,c,p):
    return git(gd,'show',f'{c}:{p}').decode('utf-8','replace')
CPP=('.cpp','.cc','.cxx','.c++')
LABEL={'accepted':'correct','wrong_answer':'incorrect','time_limit_exceeded':'incorrect',
       'run_time_error':'incorrect','rejected':'incorrect'}   # 'mixed' skipped (ambiguous)
rows=[]; stats=collections.Counter()
def build(gd, commit, prefix, probs, source, pid_fmt, test_dirs):
    files=ls(gd,commit)
    for p in probs:
        base=f'{prefix}{p}/'
        py=show(gd,commit,base+'problem.yaml') if base+'problem.yaml' in files else ''
        if re.search(r'^type:\s*interactive',py,re.M) or 'interactive' in py.split('validation:')[-1].split('\n')[0]:
            print('skip interactive',p); stats['skipped_interactive']+=1; continue
        meta={k:v.strip() for k,v in re.findall(r'^(name|license|rights_owner|validation|validator_flags|source):(.*)$',py,re.M)}
        tests=[]
        for td in test_dirs:
            ins=sorted(f for f in files if f.startswith(base+td) and f.endswith('.in'))
            for i in ins:
                a=i[:-3]+'.ans'
                if a in files:
                    tests.append({'input':show(gd,commit,i),'output':show(gd,commit,a),'name':i[len(base):]})
        sols=[]
        for f in files:
            if not f.startswith(base+'submissions/') or not f.endswith(CPP): continue
            d=f[len(base+'submissions/'):].split('/')[0]
            if d not in LABEL: stats['skipped_'+d]+=1; continue
            code=show(gd,commit,f)
            if '#include' not in code: stats['skipped_noinclude']+=1; continue
            sols.append({'code':code,'verdict_label':LABEL[d],'kattis_verdict_dir':d,'path':f})
        if not tests or not sols:
            stats['skipped_problem_'+('notests' if not tests else 'nosols')]+=1; print('skip',source,p,len(tests),len(sols)); continue
        rows.append({'problem_id':pid_fmt.format(p=p),'source':source,'name':meta.get('name'),
                     'license':meta.get('license'),'rights_owner':meta.get('rights_owner'),
                     'validation':meta.get('validation','default'),'validator_flags':meta.get('validator_flags'),
                     'tests':tests,'solutions':sols})
build('/work/.mirror/grhkm21+NWERC-2022/repo','2c31ca99a2b0490c7379830c452b9eae3d702d85','',
      list('ABCDEFGHIJKL'),'github.com/grhkm21/NWERC-2022@2c31ca99a2b0490c7379830c452b9eae3d702d85 (NWERC 2022 jury package copy)',
      'nwerc2022/{p}',['data/sample/'])
build('/work/.mirror/Kattis+problemtools/repo','a185fe9741dd28ba838a7bd21ab98b11211f6521','examples/',
      ['different','hello','oddecho','guess'],'github.com/Kattis/problemtools@a185fe9741dd28ba838a7bd21ab98b11211f6521 (examples/, MIT)',
      'kattis-problemtools/{p}',['data/sample/','data/secret/'])
with open(f'{OUT}/cpp_solutions.jsonl','w') as fh:
    for r in rows: fh.write(json.dumps(r)+'\n')
c=collections.Counter(s['verdict_label'] for r in rows for s in r['solutions'])
d=collections.Counter(s['kattis_verdict_dir'] for r in rows for s in r['solutions'])
print('problems',len(rows),'solutions',sum(c.values()),dict(c),dict(d),'tests',sum(len(r['tests']) for r in rows))
for r in rows: print(r['problem_id'],r['validation'],r['validator_flags'],len(r['tests']),collections.Counter(s['verdict_label'] for s in r['solutions']))
print(dict(stats))
