"""Drives a command through a real pseudo-terminal, like a person at a keyboard.

Reads a JSON spec on stdin: {"cmd": [...], "cwd": str, "env": {...}, "timeout": s,
"steps": [{"expect": regex, "send": text}, ...]}. For each step, waits until `expect`
matches the (ANSI-stripped) output written since the previous match, then types `send`.
Prints {"code": exit code, "output": stripped transcript, "error": str|null} as JSON.
"""
import json, os, pty, re, select, sys, time

spec = json.load(sys.stdin)
ANSI = re.compile(r'\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[()][0-9A-Za-z]|\x1b[=>]')
pid, fd = pty.fork()
if pid == 0:
    os.chdir(spec['cwd'])
    env = dict(os.environ)
    env.update(spec.get('env', {}))
    env['TERM'] = 'xterm-256color'
    os.execvpe(spec['cmd'][0], spec['cmd'], env)

raw = b''
deadline = time.time() + spec.get('timeout', 30)
error = None

def pump(wait):
    global raw
    r, _, _ = select.select([fd], [], [], wait)
    if not r:
        return True
    try:
        chunk = os.read(fd, 65536)
    except OSError:
        return False
    if not chunk:
        return False
    raw += chunk
    return True

text = lambda: ANSI.sub('', raw.decode('utf-8', 'replace'))
seen = 0
for step in spec['steps']:
    pattern = re.compile(step['expect'])
    while True:
        m = pattern.search(text(), seen)
        if m:
            seen = m.end()
            break
        if time.time() > deadline:
            error = 'timeout waiting for %r' % step['expect']
            break
        if not pump(0.1):
            error = 'process ended while waiting for %r' % step['expect']
            break
    if error:
        break
    time.sleep(0.05)
    os.write(fd, step['send'].encode())

while time.time() < deadline and pump(0.2):
    pass
code = None
for _ in range(100):
    done, status = os.waitpid(pid, os.WNOHANG)
    if done:
        code = os.waitstatus_to_exitcode(status)
        break
    time.sleep(0.05)
if code is None:
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    error = error or 'process did not exit'
print(json.dumps({'code': code, 'output': text(), 'error': error}))
