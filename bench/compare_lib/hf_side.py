"""The transformers side: drives hf_worker.py in a child process, with time limits."""

import json
import os
import queue
import subprocess
import sys
import tempfile
import threading

WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "hf_worker.py")


class HfError(RuntimeError):
    pass


class HfTimeout(HfError):
    pass


class HfWorker:
    """One child process with the model loaded; generate() runs one timed generation."""

    def __init__(self, model_path, threads, prompt, compile_static, load_timeout=900):
        self.log = tempfile.NamedTemporaryFile(prefix="staticlm-compare-hf-", suffix=".log",
                                               delete=False)
        env = dict(os.environ, HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false",
                   OMP_NUM_THREADS=str(threads))
        cmd = [sys.executable, "-u", WORKER, "--model-dir", os.path.dirname(model_path),
               "--gguf", os.path.basename(model_path), "--threads", str(threads),
               "--prompt", prompt, "--compile", "1" if compile_static else "0"]
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.log, text=True, env=env)
        self._lines = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()
        self.ready = self._receive(load_timeout, "loading the model")

    def _pump(self):
        for line in self.proc.stdout:
            self._lines.put(line)
        self._lines.put(None)

    def _receive(self, timeout, what):
        try:
            line = self._lines.get(timeout=timeout)
        except queue.Empty as e:
            self.kill()
            raise HfTimeout("transformers worker: %s took over %ds" % (what, timeout)) from e
        if line is None:
            self.proc.wait()
            raise HfError("transformers worker exited (%s) while %s; log: %s\n%s" % (
                self.proc.returncode, what, self.log.name, self.log_tail()))
        return json.loads(line)

    def log_tail(self, chars=1500):
        try:
            with open(self.log.name, encoding="utf-8", errors="replace") as f:
                return f.read()[-chars:]
        except OSError:
            return ""

    def generate(self, mode, max_new_tokens, timeout):
        self.proc.stdin.write(json.dumps({"cmd": "generate", "mode": mode,
                                          "max_new_tokens": max_new_tokens}) + "\n")
        self.proc.stdin.flush()
        reply = self._receive(timeout, "generating (%s)" % mode)
        if not reply.get("ok"):
            raise HfError("transformers %s: %s" % (mode, reply.get("error")))
        return reply

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def close(self):
        if self.proc.poll() is None:
            try:
                self.proc.stdin.write(json.dumps({"cmd": "quit"}) + "\n")
                self.proc.stdin.flush()
                self.proc.wait(timeout=60)
            except (OSError, subprocess.TimeoutExpired):
                self.kill()
        try:
            os.unlink(self.log.name)
        except OSError:
            pass
