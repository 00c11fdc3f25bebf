"""A snapshot of one Python environment, standalone: standard library only, Python 3.8+.

tfdoctor imports this module to inspect its own interpreter, and runs its source under another
interpreter for `--python PATH` (that environment need not have tfdoctor installed). It never imports
TensorFlow: the wheel's facts are read from its files (build_info.py read as literals, METADATA,
WHEEL), since importing TensorFlow costs seconds and writes ~/.keras/keras.json.

Printed (when run as a script) or returned: a JSON-able dict.
"""

import functools
import json
import os
import re
import sys
from stat import S_ISDIR, S_ISREG

# Distributions whose full metadata matters; every other one is listed by name and version only.
# Keep in step with tfdoctor/knowledge/python_compatibility.toml (a test compares them).
TENSORFLOW_DISTS = ("tensorflow", "tensorflow-cpu", "tensorflow-gpu", "tensorflow-intel",
                    "tensorflow-macos", "tensorflow-aarch64", "tensorflow-cpu-aws", "tf-nightly",
                    "tf-nightly-cpu", "tf-nightly-gpu", "intel-tensorflow", "intel-tensorflow-avx512",
                    "tensorflow-rocm")
WATCHED_PREFIXES = ("nvidia-",)
WATCHED = ("keras", "tf-keras", "tf_keras", "numpy", "protobuf", "ml-dtypes", "tensorboard",
           "tensorflow-io-gcs-filesystem", "h5py", "tensorboard-plugin-profile", "xprof", "optuna",
           "transformers", "grpcio", "wrapt",
           # add-ons built against one TensorFlow release (their Requires-Dist names it)
           "tensorflow-text", "tensorflow-io", "tensorflow-addons", "tensorflow-decision-forests",
           "tensorflow-recommenders", "tensorflow-serving-api")
# Import packages whose name is not the distribution's (the default is the name with "-" as "_").
IMPORT_NAMES = {"protobuf": "google/protobuf", "absl-py": "absl", "google-pasta": "pasta", "libclang": "clang",
                "tensorflow-io-gcs-filesystem": "tensorflow_io_gcs_filesystem", "grpcio": "grpc",
                "opt-einsum": "opt_einsum", "typing-extensions": "typing_extensions"}
# RECORD files larger than this are not verified (TensorFlow 2.21's is 1.8 MB).
RECORD_LIMIT = 16 * 1024 * 1024
MISSING_LISTED = 20

_DIST_DIR = re.compile(r"^(?P<name>[^-]+(?:-[^-]+)*?)-(?P<version>[0-9][^-]*?)(?:-py[0-9.]+)?\.(dist|egg)-info$")


def normalize(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def _parse_metadata(text):
    """Requires-Dist and Requires-Python from a METADATA (email-header) text."""
    requires = []
    requires_python = None
    name = version = None
    for line in text.splitlines():
        if not line.strip():
            break  # headers end at the first blank line; the long description follows
        key, sep, value = line.partition(":")
        if not sep:
            continue
        value = value.strip()
        if key == "Requires-Dist":
            requires.append(value)
        elif key == "Requires-Python":
            requires_python = value
        elif key == "Name":
            name = value
        elif key == "Version":
            version = value
    return {"name": name, "version": version, "requires_dist": requires, "requires_python": requires_python}


# What each file of site-packages may cost (the snapshot reads no file whole without a limit: a gigabyte
# planted under one of these names costs at most its limit of memory, a FIFO nothing).
READ_LIMIT = 8 * 1024 * 1024  # a RECORD read for its top-level names: the largest wheels' are ~2 MB
SMALL_LIMIT = 64 * 1024  # WHEEL, INSTALLER, top_level.txt: a few lines each
PTH_LIMIT = 1024 * 1024  # a .pth file: a few paths or one import line
BUILD_INFO_LIMIT = 1024 * 1024  # tensorflow/python/platform/build_info.py: a few KB as generated
READ_SECONDS = 5.0  # one file; checked between chunks (a read the kernel holds cannot be cut short here)
_CHUNK = 1024 * 1024


def _read_bytes(path, limit):
    """At most `limit` bytes of a regular file (OSError otherwise), in chunks, no longer than READ_SECONDS:
    opened non-blocking so a FIFO planted in site-packages cannot hold the snapshot, and a device is never
    read. This file runs alone under other interpreters (--python), so it cannot use tfdoctor.facts.bounded."""
    import time

    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        if not S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{path} is not a regular file")
        os.set_blocking(fd, True)
        deadline = time.monotonic() + READ_SECONDS
        chunks, size = [], 0
        while size < limit:
            if time.monotonic() > deadline:
                raise OSError(f"{path} took longer than {READ_SECONDS:g} s to read")
            chunk = os.read(fd, min(_CHUNK, limit - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def _read(path, limit=READ_LIMIT):
    """A regular file's text, at most `limit` bytes (OSError otherwise), read by _read_bytes."""
    data = _read_bytes(path, limit + 1)
    if len(data) > limit:
        raise OSError(f"{path} is larger than {limit} bytes")
    return data.decode("utf-8", errors="replace")


def _literal_value(node):
    """A literal, or a mapping built by a call of literals: TensorFlow 2.x writes
    `build_info = collections.OrderedDict([('is_cuda_build', False), ...])`, older ones `dict(...)`."""
    import ast
    if isinstance(node, ast.Call) and not node.keywords and len(node.args) == 1:
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        if name in ("OrderedDict", "dict"):
            return dict(ast.literal_eval(node.args[0]))
    return ast.literal_eval(node)


def _literal_assignments(tree):
    """Module-level NAME = <literal> (or a literal mapping call); anything else is skipped."""
    import ast

    values = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            try:
                values[node.targets[0].id] = _literal_value(node.value)
            except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                continue
    return values


# build_info.py is machine-generated and tiny, and `ast` costs the pre-job hook ~1.6 ms to import (ast and
# _ast). This strict reader takes exactly what the generator writes — comments, a docstring, `import
# collections` (`from __future__ import …` in TensorFlow 2.0-2.4), and one-line `NAME = literal` of plain
# quoted strings, decimal numbers, True/False/None, lists, tuples, dicts, or a dict/OrderedDict(...) of one
# of them — and gives what _literal_assignments(ast.parse(text)) gives; anything else is refused (None),
# and read_build_info parses with ast. One token per match at successive positions, each alternative
# unambiguous on its first character: time linear in the text, whatever it holds. NUL and lone surrogates,
# which Python's parser refuses, are refused before (in the classes below, their ranges made compiling the
# pattern cost ~1 ms of every run).
_BUILD_INFO_TOKEN = r"""
    (?P<space>[ \t]+)
  | (?P<newline>\r?\n)
  | (?P<comment>\#[^\r\n]*)
  | (?P<docstring>'''(?:[^'\\]|'(?!''))*'''|\"\"\"(?:[^"\\]|"(?!""))*\"\"\")
  | (?P<unterminated>'''|\"\"\")
  | (?P<string>'[^'\\\r\n]*'|"[^"\\\r\n]*")
  | (?P<number>[0-9]+(?:\.[0-9]*)?|\.[0-9]+)
  | (?P<name>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<op>[()\[\]{},:=.])
"""


@functools.lru_cache(maxsize=None)  # noqa: UP033 - functools.cache is 3.9+; this file runs under 3.8
def _build_info_token():
    """The pattern, compiled on first use: only an environment with TensorFlow has a build_info.py to read."""
    return re.compile(_BUILD_INFO_TOKEN, re.VERBOSE)
_KEYWORDS = frozenset(("False", "None", "True", "and", "as", "assert", "async", "await", "break", "class",
                       "continue", "def", "del", "elif", "else", "except", "finally", "for", "from", "global", "if",
                       "import", "in", "is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return", "try",
                       "while", "with", "yield", "__debug__"))  # not a name to assign (nor import)
_CONSTANTS = {"True": True, "False": False, "None": None}
_FUTURE_FEATURES = frozenset(("absolute_import", "division", "print_function", "unicode_literals", "generators",
                              "nested_scopes", "with_statement", "generator_stop", "annotations"))
_MAX_DEPTH = 50  # brackets within brackets; Python's own parser stops at 200
_MAX_NUMBER = 100  # digits: a longer number is left to ast (int() is quadratic in its length)


class _Refused(Exception):
    """Not a file the generator writes: the caller parses it with ast."""


class _GeneratedModule:
    """A cursor over the tokens of a build_info.py, read one at a time (spaces kept: a statement may not be
    indented)."""

    def __init__(self, text):
        self.text, self.position = text, 0
        self.ahead = None  # the next token once peeked at, its leading space skipped

    def _next(self):
        if self.position >= len(self.text):
            return "end", ""
        found = _build_info_token().match(self.text, self.position)
        if found is None or found.lastgroup == "unterminated":
            raise _Refused
        self.position = found.end()
        return found.lastgroup, found.group()

    def take(self, skip_space=True):
        token, self.ahead = self.ahead or self._next(), None
        if skip_space and token[0] == "space":
            token = self._next()
        return token

    def peek(self):
        if self.ahead is None:
            token = self._next()
            self.ahead = self._next() if token[0] == "space" else token
        return self.ahead

    def expect(self, text):
        if self.take()[1] != text:
            raise _Refused

    def identifier(self):
        kind, text = self.take()
        if kind != "name" or text in _KEYWORDS:
            raise _Refused
        return text

    def end_of_line(self):
        kind = self.take()[0]
        if kind == "comment":
            kind = self.take()[0]
        if kind not in ("newline", "end"):
            raise _Refused

    def assignments(self):
        values = {}
        future_allowed = True  # `from __future__` only before other statements, as Python requires
        first = True
        while True:
            kind, text = self.take(skip_space=False)
            if kind == "end":
                return values
            if kind == "space":  # a blank or comment line may be indented; a statement may not
                self.end_of_line()
                continue
            if kind in ("newline", "comment"):
                if kind == "comment":
                    self.end_of_line()
                continue
            if kind in ("docstring", "string"):
                future_allowed = future_allowed and first
            elif text == "import":
                self.identifier()
                while self.peek()[1] == ".":
                    self.take()
                    self.identifier()
                future_allowed = False
            elif text == "from":
                if not future_allowed or self.identifier() != "__future__":
                    raise _Refused
                self.expect("import")
                if self.identifier() not in _FUTURE_FEATURES:
                    raise _Refused
            elif kind == "name" and text not in _KEYWORDS:
                self.expect("=")
                values[text] = self.assigned()
                future_allowed = False
            else:
                raise _Refused
            first = False
            self.end_of_line()

    def assigned(self):
        """The right-hand side: a literal, or dict/OrderedDict/collections.OrderedDict of one (as
        _literal_value reads it)."""
        name = self.peek()[1]
        if name not in ("dict", "OrderedDict", "collections"):
            return self.literal(0)
        self.take()
        if name == "collections":
            self.expect(".")
            self.expect("OrderedDict")
        self.expect("(")
        argument = self.literal(1)
        self.expect(")")
        try:
            return dict(argument)
        except (TypeError, ValueError):
            raise _Refused from None

    def literal(self, depth):
        if depth > _MAX_DEPTH:
            raise _Refused
        kind, text = self.take()
        if kind == "string":
            return text[1:-1]
        if kind == "number" and len(text) <= _MAX_NUMBER:
            if "." in text:
                return float(text)
            if text[0] == "0" and text.strip("0"):
                raise _Refused  # 010 is a syntax error
            return int(text)
        if kind == "name" and text in _CONSTANTS:
            return _CONSTANTS[text]
        if text == "[":
            return self.items("]", depth)
        if text == "(":
            if self.peek()[1] == ")":
                self.take()
                return ()
            inner = self.literal(depth + 1)
            if self.peek()[1] == ")":
                self.take()
                return inner  # (x) is x
            self.expect(",")
            return tuple([inner, *self.items(")", depth)])
        if text == "{":
            mapping = {}
            while self.peek()[1] != "}":
                key = self.literal(depth + 1)
                self.expect(":")
                try:
                    mapping[key] = self.literal(depth + 1)
                except TypeError:  # an unhashable key
                    raise _Refused from None
                if self.peek()[1] != "}":
                    self.expect(",")
            self.take()
            return mapping
        raise _Refused

    def items(self, close, depth):
        """Literals separated by commas up to `close` (a trailing comma allowed), the opener taken."""
        found = []
        while self.peek()[1] != close:
            found.append(self.literal(depth + 1))
            if self.peek()[1] != close:
                self.expect(",")
        self.take()
        return found


def _encodable(text):
    """Whether `text` is valid Unicode source (no lone surrogate), as Python's parser requires."""
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _generated_assignments(text):
    """What _literal_assignments(ast.parse(text)) gives, for a build_info.py as TensorFlow generates it;
    None for any other text (never an exception)."""
    if "\x00" in text or not _encodable(text):
        return None
    try:
        return _GeneratedModule(text).assignments()
    except (_Refused, RecursionError, MemoryError):
        return None


def read_build_info(path):
    """tensorflow/python/platform/build_info.py -> the build_info dict (cuda_version, cudnn_version…)."""
    try:
        text = _read(path, BUILD_INFO_LIMIT)
        values = _generated_assignments(text)
        if values is None:  # not as the generator writes it: Python's own parser decides
            import ast
            values = _literal_assignments(ast.parse(text, filename=path))
    except (OSError, SyntaxError, ValueError) as exc:
        return {"$unknown": "build_info.py unreadable: " + str(exc)}
    info = values.get("build_info")
    if isinstance(info, dict):
        return {str(k): v for k, v in info.items() if isinstance(v, (str, int, float, bool, list, type(None)))}
    # Older wheels: plain module-level constants.
    return {k: v for k, v in values.items() if not k.startswith("_") and isinstance(v, (str, int, bool))}


def _wheel_tags(dist_dir):
    try:
        text = _read(os.path.join(dist_dir, "WHEEL"), SMALL_LIMIT)
    except OSError:
        return []
    return [line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("Tag:")]


def _scan(paths, modules=None):
    """Every distribution on the path, first occurrence wins (as the import system would see it).
    `modules`, when given, receives every top-level importable name -> the path entry it comes from."""
    found = {}
    for entry in paths:
        if not entry or not os.path.isdir(entry):
            continue
        try:
            names = sorted(os.listdir(entry))
        except OSError:
            continue
        if modules is not None:
            for filename in names:
                module = _module_name(filename)
                if module and module not in modules:
                    modules[module] = entry
        for filename in names:
            match = _DIST_DIR.match(filename)
            if not match:
                continue
            key = normalize(match.group("name"))
            if key in found:
                found[key].setdefault("shadowed", []).append(entry)
                found[key].setdefault("shadowed_versions", []).append(match.group("version"))
                continue
            found[key] = {"version": match.group("version"), "location": entry,
                          "dist_dir": os.path.join(entry, filename)}
    return found


def installed_distribution(paths, names):
    """(name, version) of the first of `names` installed on `paths`, as the import system would find it, read
    from the names of the dist-info folders alone (no file is opened); None when none is. For `tfdoctor lint
    --target-tensorflow installed`, which needs the release and nothing else of the snapshot."""
    found = _scan(paths)
    for name in names:
        entry = found.get(normalize(name))
        if entry is not None:
            return name, entry["version"]
    return None


def _module_name(filename):
    """The top-level import name a directory entry provides ("numpy", "six.py",
    "_cffi.cpython-311-x86_64-linux-gnu.so"), None for metadata and other files."""
    if filename.endswith((".dist-info", ".egg-info", ".pth", ".libs", ".data")) or filename.startswith((".", "__")):
        return None
    stem, dot, rest = filename.partition(".")
    if not dot:
        return stem
    if rest == "py" or rest.endswith(("so", "pyd")):
        return stem
    return None


def _record_entries(text, needle):
    """(path, hash, size) of the RECORD lines whose path contains `needle` (found with bytes.find: a RECORD
    has ~15000 lines, and splitting them all costs more than the whole rest of the snapshot). hash is the
    RECORD's "sha256=..." (b"" when absent), size its byte count (None when absent)."""
    found = []
    at = text.find(needle)
    while at != -1:
        start = text.rfind(b"\n", 0, at) + 1
        end = text.find(b"\n", at)
        end = len(text) if end == -1 else end
        comma = text.find(b",", start, end)
        if comma != -1 and comma >= at:
            rest = text[comma + 1:end].rstrip(b"\r").split(b",")
            digest = rest[0] if rest else b""
            size = int(rest[1]) if len(rest) > 1 and rest[1].isdigit() else None
            found.append((text[start:comma].decode("utf-8", "replace"), digest, size))
        at = text.find(needle, end)
    return found


_SHARED_OBJECT = re.compile(r"\.(so(\.[0-9]+)*|pyd|dylib|dll)$")
# The suffixes of the shared objects a wheel for this platform holds. Each is one pass of bytes.find
# over the whole RECORD (TensorFlow's is 1.8 MB, ~1.5 ms a pass here): a Linux wheel has no .pyd, .dll
# or .dylib to look for.
if sys.platform.startswith(("win", "cygwin")):
    SHARED_SUFFIXES = (b".pyd", b".dll")
elif sys.platform == "darwin":
    SHARED_SUFFIXES = (b".so", b".dylib")
else:
    SHARED_SUFFIXES = (b".so",)
# Hashing is the costly part of verifying (TensorFlow 2.21's shared objects are ~1 GB): the smallest shared
# objects are hashed, smallest first, until this many bytes have been read; every size is compared (a stat).
# The sums are a sample: what damages an install (a truncated copy, an uninstall of a distribution that shared
# the files, another build written over it) changes sizes or every file, and the sample sees the latter.
# 1 MiB is TensorFlow 2.21's 15 smallest of 77; 4 MiB (34 of them) cost a run with nothing kept ~3 ms more of
# a ~70 ms pre-job hook (benchmarks/check_speed_ab.py --nothing-kept, 2026-11-28), a budget of 3 % of the import.
HASH_BUDGET = 1024 * 1024


def _sha256():
    """A sha256 object from OpenSSL's _hashlib (importing it costs ~2 ms; `hashlib` ~10 ms more on a loaded
    node, building every constructor it offers), hashlib's where _hashlib is missing."""
    try:
        import _hashlib

        return _hashlib.openssl_sha256()
    except (ImportError, AttributeError, ValueError):
        import hashlib

        return hashlib.sha256()


# base64's urlsafe alphabet from the standard one (binascii, which base64 itself would import).
_URLSAFE = bytes.maketrans(b"+/", b"-_")


def _sha256_record(path, size):
    """The RECORD spelling of a file's sha256 ("sha256=" + urlsafe base64, no padding), of at most `size` + 1
    bytes: a file that grew past the size its stat gave is another file than installed, read no further."""
    return _hash_file(path, size)[0]


def _hash_file(path, size):
    """(the RECORD spelling of the sha256 of at most `size` + 1 bytes of the file, its cache key) — the key
    (see HashCache) from the open file's own stat, None when the bytes read were not exactly `size`."""
    import binascii

    digest = _sha256()
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # a file swapped for a FIFO since the stat cannot hold us
    status = os.fstat(fd)
    if not S_ISREG(status.st_mode):
        os.close(fd)
        raise OSError(f"{path} is not a regular file")
    os.set_blocking(fd, True)
    read = 0
    with os.fdopen(fd, "rb") as handle:
        while read <= size:
            chunk = handle.read(min(1 << 20, size + 1 - read))
            if not chunk:
                break
            digest.update(chunk)
            read += len(chunk)
    encoded = binascii.b2a_base64(digest.digest(), newline=False).translate(_URLSAFE)
    key = stat_key(status) if read == size == status.st_size else None
    return b"sha256=" + encoded.rstrip(b"="), key


STAT_KEY_FIELDS = 4


def stat_key(status):
    # No st_dev: NFS clients number the same export differently (0:53 on one node, 0:48 on the next), and
    # the cache sits in a HOME that every node of a cluster shares; keyed on the device, jobs on alternating
    # nodes would replace each other's entries and never find one. The inode, size, mtime and ctime are the
    # server's, the same on every node; a file replaced or rewritten changes at least one of them.
    return [status.st_ino, status.st_size, status.st_mtime_ns, status.st_ctime_ns]


# What verifying a RECORD learns is kept from one run to the next in the user's cache folder, each value
# with the stat of the file it was made from: inode, size, mtime and ctime (in ns; not the device: see
# stat_key). The ctime cannot be set back from user space, so a file rewritten in place with its size and mtime restored
# (cp --preserve, touch -r) no longer matches; a file replaced by another gets another inode. The pre-job
# hook runs on the same environment job after job: reading TensorFlow's 1.8 MB RECORD and searching it
# twice, and hashing the same shared objects (importing OpenSSL for it), took ~9 ms of a ~65 ms
# `tfdoctor check` on a 2-CPU node; kept, ~1.5 ms. Kept: the lines of a RECORD that are verified
# (RECORD_MEMO_NAME), and the sha256 of each file hashed (HASH_CACHE_NAME) — a sum, never a verdict: a
# file that differed from its RECORD line when it was hashed keeps differing.
HASH_CACHE_NAME = "record-sha256.json"
RECORD_MEMO_NAME = "record-lines.json"
STAT_MEMO_LIMIT = 4 * 1024 * 1024  # bytes of a cache file read; a larger one is ignored
HASH_CACHE_ENTRIES = 1000  # files whose sums are kept, the most recently hashed (~30 environments' worth)
RECORD_MEMO_ENTRIES = 4  # RECORDs whose lines are kept (~70 KB each for TensorFlow 2.21)
RECORD_LINES_FORMAT = 1  # raised whenever _verified_lines selects or keeps lines otherwise
# A file changed this recently is not remembered: the clock that stamps ctime ticks in milliseconds, so a
# second change within the same tick as the one read would leave the key as it was (git's "racily clean"
# index entries, handled alike).
RACY_NS = 2_000_000_000


def cache_folder(environ=None):
    """Where what verifying RECORDs learns is kept: $TFDOCTOR_CACHE_DIR (set empty: nowhere), else
    $XDG_CACHE_HOME/tfdoctor, else $HOME/.cache/tfdoctor; each only as an absolute path (a relative one
    would follow the job's working folder), None when there is none (a job environment without HOME
    verifies from scratch every run)."""
    environ = os.environ if environ is None else environ
    folder = environ.get("TFDOCTOR_CACHE_DIR")
    if folder is not None:
        return folder if os.path.isabs(folder) else None
    if folder is None:
        xdg, home = environ.get("XDG_CACHE_HOME", ""), environ.get("HOME", "")
        if os.path.isabs(xdg):
            folder = os.path.join(xdg, "tfdoctor")
        elif os.path.isabs(home):
            folder = os.path.join(home, ".cache", "tfdoctor")
    return folder or None


def hash_cache_path(environ=None):
    """The file of kept sums in cache_folder(environ), None without one."""
    folder = cache_folder(environ)
    return os.path.join(folder, HASH_CACHE_NAME) if folder else None


class StatMemo:
    """Values made from files, each kept with that file's stat key: {file: [[ino, size, mtime_ns,
    ctime_ns], value]} in one JSON file. A cache file that is not ours, that others may write, that is
    malformed, or whose `tag` is not this one (what the values were made by: a later tfdoctor that reads
    files otherwise gives its values another tag) is ignored (and replaced); the most recently kept `keep`
    values are written back."""

    def __init__(self, path, keep, tag):
        self.path, self.keep, self.tag = path, keep, tag
        self.entries = {}
        self.added = False
        if not folder_is_ours(os.path.dirname(path)):
            return
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        except OSError:
            return
        try:
            status = os.fstat(fd)
            trusted = getattr(os, "getuid", None) is None or (
                status.st_uid == os.getuid() and not status.st_mode & 0o022)
            if not S_ISREG(status.st_mode) or not trusted or status.st_size > STAT_MEMO_LIMIT:
                return
            data = json.loads(os.read(fd, STAT_MEMO_LIMIT).decode("utf-8"))
        except (OSError, ValueError, RecursionError):
            return
        finally:
            os.close(fd)
        ours = isinstance(data, dict) and data.get("version") == 1 and data.get("tag") == tag
        entries = data.get("entries") if ours else None
        if isinstance(entries, dict):
            self.entries = {p: e for p, e in entries.items() if isinstance(e, list) and len(e) == 2
                            and isinstance(e[0], list) and len(e[0]) == STAT_KEY_FIELDS
                            and all(type(v) is int for v in e[0])}

    def get(self, name, key):
        """The value kept for `name` with exactly this stat key, else None."""
        entry = self.entries.get(name)
        return entry[1] if entry is not None and entry[0] == key else None

    def put(self, name, key, value):
        import time

        if time.time_ns() - key[-1] < RACY_NS:  # the ctime, last in the key
            return
        self.entries.pop(name, None)  # re-inserted last: the most recent are kept
        self.entries[name] = [key, value]
        self.added = True

    def save(self):
        """Written whole to a file of our own, then renamed over the old one: a reader never sees half of it,
        and two runs at once leave one's (the other's values are made again next time). Never fails a run."""
        if not self.added:
            return
        kept = dict(list(self.entries.items())[-self.keep:])
        temporary = f"{self.path}.{os.getpid()}.tmp"
        created = False
        try:
            os.makedirs(os.path.dirname(self.path), mode=0o700, exist_ok=True)
            if not folder_is_ours(os.path.dirname(self.path)):
                return  # kept nowhere, as without a cache folder
            fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
            created = True
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(json.dumps({"version": 1, "tag": self.tag, "entries": kept}, separators=(",", ":")))
            os.replace(temporary, self.path)
        except OSError:
            if created:  # ours (O_EXCL): a failed write or rename leaves nothing behind; another's is left
                _unlink_quietly(temporary)


def folder_is_ours(folder):
    """The cache folder may be followed: a folder (or a link to one) that this user owns, the link too,
    which group and others may not write. A `tfdoctor` link another user planted in a shared, sticky
    XDG_CACHE_HOME (/tmp) would have root's run write its cache wherever the link points."""
    if getattr(os, "getuid", None) is None:
        return True
    uid = os.getuid()
    try:
        link, status = os.lstat(folder), os.stat(folder)
    except OSError:
        return False
    return (link.st_uid == uid and status.st_uid == uid and S_ISDIR(status.st_mode)
            and not status.st_mode & 0o022)


def _unlink_quietly(path):
    try:
        os.unlink(path)
    except OSError:
        return False
    return True


class HashCache(StatMemo):
    """The kept sums: {absolute path of a shared object: [stat key, "sha256=…"]}."""

    def __init__(self, path):
        super().__init__(path, HASH_CACHE_ENTRIES, "sha256")

    def get(self, name, key):
        value = super().get(name, key)
        return value.encode("ascii", "replace") if isinstance(value, str) else None

    def put(self, name, key, value):
        super().put(name, key, value.decode("ascii", "replace"))


def record_memo(path):
    """The StatMemo of verified RECORD lines at `path`, tagged with what selects them (RECORD_LINES_FORMAT,
    the shared-object suffixes searched for on this platform)."""
    tag = f"record-lines/{RECORD_LINES_FORMAT}:" + ",".join(s.decode() for s in SHARED_SUFFIXES)
    return StatMemo(path, RECORD_MEMO_ENTRIES, tag)


class RecordTooLarge(Exception):
    """A RECORD past RECORD_LIMIT: not verified."""


def _memo_row(row):
    """[relative path, RECORD digest, RECORD size or None, shared object?], as _verified_lines keeps it."""
    return (isinstance(row, list) and len(row) == 4 and isinstance(row[0], str) and isinstance(row[1], str)
            and (row[2] is None or type(row[2]) is int) and type(row[3]) is bool)


def _verified_lines(path, memo):
    """{relative path: (RECORD digest, RECORD size)} of the shared objects and `__init__.py` files a RECORD
    lists, and the set of the shared objects: from `memo` (a StatMemo) while the RECORD is unchanged,
    else searched for in the file (OSError when it cannot be read)."""
    status = os.stat(path)
    if status.st_size > RECORD_LIMIT:
        raise RecordTooLarge(f"RECORD is larger than {RECORD_LIMIT} bytes: not verified")
    key = stat_key(status)
    rows = memo.get(path, key) if memo is not None and S_ISREG(status.st_mode) else None
    if isinstance(rows, list) and all(_memo_row(r) for r in rows):
        wanted = {r[0]: (r[1].encode("ascii", "replace"), r[2]) for r in rows}
        return wanted, {r[0] for r in rows if r[3]}
    text = _read_bytes(path, RECORD_LIMIT)
    wanted = {p: (d, s) for p, d, s in _record_entries(text, b"__init__.py,") if p.endswith("__init__.py")}
    shared = set()
    for needle in SHARED_SUFFIXES:
        for p, d, s in _record_entries(text, needle):
            if _SHARED_OBJECT.search(p):
                wanted[p] = (d, s)
                shared.add(p)
    if memo is not None and len(text) == status.st_size:
        memo.put(path, key, [[p, d.decode("ascii", "replace"), s, p in shared] for p, (d, s) in wanted.items()])
        memo.save()
    return wanted, shared


def verify_record(dist_dir, location, hash_budget=HASH_BUDGET, hash_cache=None, record_memo=None):
    """Whether the shared objects and `__init__.py` files the distribution's RECORD lists are still there
    as installed: each one's existence and size (a stat), and the sha256 of the smallest shared objects
    within `hash_budget` bytes. {"checked": N, "missing_count", "missing": [first paths], "size_mismatch_count",
    "size_mismatch": [{"path", "recorded", "actual"}], "hashed": H, "hashed_bytes", "hash_budget",
    "hash_cached": of the H, how many digests were remembered from an earlier run for the unchanged file
    (`hash_cache`, a HashCache; None: every one is hashed now), "hash_mismatch_count", "hash_mismatch":
    [paths]}, or an unknown with the reason. `record_memo` (a StatMemo) keeps the RECORD's verified lines
    between runs."""
    try:
        wanted, shared = _verified_lines(os.path.join(dist_dir, "RECORD"), record_memo)
    except RecordTooLarge as exc:
        return {"$unknown": str(exc)}
    except OSError as exc:
        return {"$unknown": "RECORD unreadable: " + (exc.strerror or str(exc))}
    missing, wrong_size, hashable = [], [], []
    count = 0
    base = location.rstrip(os.sep) + os.sep
    for relative in sorted(wanted):
        if relative.startswith(("/", "..")):
            continue  # scripts and headers outside site-packages
        count += 1
        digest, size = wanted[relative]
        try:
            status = os.stat(base + relative)
        except OSError:
            missing.append(relative)
            continue
        actual = status.st_size
        if size is not None and actual != size:
            wrong_size.append({"path": relative, "recorded": size, "actual": actual})
        elif relative in shared and digest.startswith(b"sha256=") and size is not None \
                and S_ISREG(status.st_mode):  # never open a FIFO or a device planted under a listed name
            hashable.append((size, relative, digest, stat_key(status)))
    hashed, hashed_bytes, cached, wrong_hash = 0, 0, 0, []
    for size, relative, digest, key in sorted(hashable):
        if hashed_bytes + size > hash_budget:
            break
        path = base + relative
        actual = hash_cache.get(path, key) if hash_cache is not None else None
        if actual is not None:
            cached += 1
        else:
            try:
                actual, key = _hash_file(path, size)
            except OSError:
                continue
            if hash_cache is not None and key is not None:
                hash_cache.put(path, key, actual)
        if actual != digest:
            wrong_hash.append(relative)
        hashed += 1
        hashed_bytes += size
    if hash_cache is not None:
        hash_cache.save()
    return {"checked": count, "missing_count": len(missing), "missing": missing[:MISSING_LISTED],
            "size_checked": count - len(missing), "size_mismatch_count": len(wrong_size),
            "size_mismatch": wrong_size[:MISSING_LISTED], "hashed": hashed, "hashed_bytes": hashed_bytes,
            "hash_budget": hash_budget, "hash_cached": cached, "hash_mismatch_count": len(wrong_hash),
            "hash_mismatch": wrong_hash[:MISSING_LISTED]}


def _top_level(dist_dir):
    """The import packages a distribution provides: top_level.txt, else the first parts of RECORD."""
    try:
        return sorted({line.strip() for line in _read(os.path.join(dist_dir, "top_level.txt"), SMALL_LIMIT)
                       .splitlines() if line.strip()})
    except OSError:
        pass
    try:
        record = _read(os.path.join(dist_dir, "RECORD"))
    except OSError:
        return None
    names = set()
    for line in record.splitlines():
        first = line.split(",", 1)[0].split("/", 1)
        top = first[0]
        if not top or top.endswith((".dist-info", ".data")) or top.startswith(("..", "__pycache__")):
            continue
        if len(first) == 1:  # a top-level module file
            if not top.endswith(".py"):
                continue
            top = top[:-3]
        names.add(top)
    return sorted(names)


HEADER_LIMIT = 64 * 1024  # METADATA's headers come first; the long description after them is not needed
# The watched distributions' headers may be longer: metadata written before wheel 0.31 (2018) keeps the long
# description in a Description header, ahead of Requires-Dist.
WATCHED_HEADER_LIMIT = 1024 * 1024


def _metadata_headers(dist_dir, limit=HEADER_LIMIT):
    """The headers of a distribution's METADATA (PKG-INFO for an egg) parsed by _parse_metadata, reading no
    further than the blank line that ends them within `limit` bytes; None when unreadable, or when the
    headers run past `limit` (a partial list, its last line maybe cut, is not the list)."""
    for meta_name in ("METADATA", "PKG-INFO"):
        try:
            data = _read_bytes(os.path.join(dist_dir, meta_name), limit)
        except OSError:
            continue
        ends = [at for at in (data.find(b"\n\n"), data.find(b"\r\n\r\n")) if at != -1]
        if not ends and len(data) >= limit:
            return None
        return _parse_metadata((data[:min(ends)] if ends else data).decode("utf-8", "replace"))
    return None


def _requires_of(dist_dir):
    """The Requires-Dist lines of a distribution that are not behind an extra (the requirement graph that
    pip's resolver keeps: a fix moving one package must not break another's), None when unreadable."""
    meta = _metadata_headers(dist_dir) if dist_dir else None
    if meta is None:
        return None
    return [line for line in meta["requires_dist"] if "extra" not in line.partition(";")[2]]


def _listed(info):
    listed = {"version": info["version"], "location": info["location"]}
    if info.get("requires_dist") is not None:
        listed["requires_dist"] = info["requires_dist"]
    return listed


def _detail(info, paths, tensorflow=False, key="", cache=None):
    dist_dir = info.pop("dist_dir")
    meta = _metadata_headers(dist_dir, WATCHED_HEADER_LIMIT)
    if meta is not None:
        info["requires_dist"] = meta["requires_dist"]
        info["requires_python"] = meta["requires_python"]
        if meta["version"]:
            info["version"] = meta["version"]
    info["wheel_tags"] = _wheel_tags(dist_dir)
    if tensorflow:
        # Several TensorFlow distributions may write into the same package: which one wrote last
        # (the newest metadata folder) owns most of the files there now.
        info["top_level"] = _top_level(dist_dir)
        try:
            info["installed_at"] = round(os.stat(dist_dir).st_mtime, 3)
        except OSError:
            info["installed_at"] = None
        try:
            info["installer"] = _read(os.path.join(dist_dir, "INSTALLER"), SMALL_LIMIT).strip() or None
        except OSError:
            info["installer"] = None
        if info["top_level"]:
            folder = cache_folder() if cache is None else cache
            info["record"] = verify_record(
                dist_dir, info["location"],
                hash_cache=HashCache(os.path.join(folder, HASH_CACHE_NAME)) if folder else None,
                record_memo=record_memo(os.path.join(folder, RECORD_MEMO_NAME)) if folder else None)
    import_name = IMPORT_NAMES.get(key, key.replace("-", "_"))
    if tensorflow:
        import_name = "tensorflow" if info.get("top_level") != [] else None
    if import_name:
        found = _find_package(paths, *import_name.split("/"))
        if found is None:
            found = _find_package(paths, import_name + ".py")
        info["import_location"] = os.path.dirname(found) if found else None
        if found and "/" in import_name:  # google/protobuf -> the folder that holds google/
            info["import_location"] = os.path.dirname(info["import_location"])
    return info


# platform.python_implementation()'s spelling of sys.implementation.name.
_IMPLEMENTATIONS = {"cpython": "CPython", "pypy": "PyPy", "ironpython": "IronPython", "jython": "Jython"}


def _uname():
    """(system, release, version, machine) as the `platform` module gives them. os.uname() where it
    exists: importing `platform` compiles a dozen regular expressions, a few ms of every pre-job hook."""
    if hasattr(os, "uname"):
        u = os.uname()
        return u.sysname, u.release, u.version, u.machine
    import platform  # pragma: no cover - not POSIX

    return platform.system(), platform.release(), platform.version(), platform.machine()


def python_version():
    """platform.python_version(): the first word of sys.version ("3.11.7", "3.13.0rc1")."""
    return sys.version.split()[0]


def python_implementation():
    name = sys.implementation.name
    return _IMPLEMENTATIONS.get(name, name)


def marker_environment():
    """The values PEP 508 markers are evaluated against, for this interpreter (packaging's
    default_environment, rebuilt here because the snapshot may run where packaging is absent)."""
    impl = sys.implementation.version
    impl_version = f"{impl.major}.{impl.minor}.{impl.micro}"
    if impl.releaselevel != "final":
        impl_version += impl.releaselevel[0] + str(impl.serial)
    system, release, version, machine = _uname()
    return {
        "implementation_name": sys.implementation.name,
        "implementation_version": impl_version,
        "os_name": os.name,
        "platform_machine": machine,
        "platform_release": release,
        "platform_system": system,
        "platform_version": version,
        "python_full_version": python_version(),
        "platform_python_implementation": python_implementation(),
        "python_version": f"{sys.version_info[0]}.{sys.version_info[1]}",
        "sys_platform": sys.platform,
    }


def _find_package(paths, *parts):
    for entry in paths:
        candidate = os.path.join(entry, *parts)
        if entry and os.path.exists(candidate):
            return candidate
    return None


def environment_path():
    """sys.path minus its first entry, the folder of whatever script runs the snapshot (tfdoctor's
    bin folder, the current directory for `python -c`): that belongs to tfdoctor's invocation, not
    to the environment the job will see. With -P (safe_path) Python adds no such entry."""
    if getattr(sys.flags, "safe_path", False):
        return list(sys.path)
    return list(sys.path[1:])


def _pth_entries(site_dirs):
    """Folders added by .pth files in the site folders: {folder: the .pth file naming it}."""
    added = {}
    for site_dir in site_dirs:
        try:
            names = sorted(n for n in os.listdir(site_dir) if n.endswith(".pth"))
        except OSError:
            continue
        for name in names:
            pth = os.path.join(site_dir, name)
            try:
                lines = _read(pth, PTH_LIMIT).splitlines()[:1000]
            except OSError:
                continue
            for line in lines:
                line = line.strip()
                if not line or line.startswith(("#", "import ", "import\t")):
                    continue
                folder = os.path.normpath(os.path.join(site_dir, line))
                added.setdefault(folder, pth)
    return added


def _absolute(entry):
    """os.path.abspath, normalised; a relative entry as it is when the current folder is gone (a job started
    in a folder removed since: abspath raises there)."""
    try:
        return os.path.normpath(os.path.abspath(entry))
    except OSError:
        return os.path.normpath(entry)


def path_origins(paths, environ, site_dirs=None, user_site=None):
    """Why each path entry is there, parallel to `paths`: "pythonpath" (the PYTHONPATH variable),
    "site-packages" (the environment's own), "user-site", "pth:<file>" (a .pth file), "stdlib", "other"."""
    import site

    if site_dirs is None:
        site_dirs = site.getsitepackages() if hasattr(site, "getsitepackages") else []
        user_site = site.getusersitepackages() if site.ENABLE_USER_SITE else None
    pythonpath = {_absolute(p) for p in environ.get("PYTHONPATH", "").split(os.pathsep) if p}
    sites = {os.path.normpath(d) for d in site_dirs}
    user = os.path.normpath(user_site) if user_site else None
    pth = _pth_entries([d for d in list(site_dirs) + ([user_site] if user_site else []) if d])
    stdlib = os.path.dirname(os.__file__)
    origins = []
    for entry in paths:
        key = _absolute(entry) if entry else entry
        if key in pythonpath:
            origins.append("pythonpath")
        elif key in sites:
            origins.append("site-packages")
        elif user is not None and key == user:
            origins.append("user-site")
        elif key in pth:
            origins.append("pth:" + pth[key])
        elif key == stdlib or key.startswith(stdlib + os.sep) or key.endswith(".zip"):
            origins.append("stdlib")
        else:
            origins.append("other")
    return origins


_GENCODE = re.compile(r"^# Protobuf Python Version: ([0-9][0-9A-Za-z.+-]{0,40})$", re.MULTILINE)
GENCODE_PROBE = ("tensorflow", "core", "framework", "attr_value_pb2.py")


def read_gencode(path):
    """The protobuf version TensorFlow's generated code was made with: the "# Protobuf Python Version: X"
    line protoc writes at the top of every _pb2 module from protobuf 5.26 on (those modules then check the
    runtime through google.protobuf.runtime_version). None when the line is absent (older generated code)."""
    try:
        head = _read_bytes(path, 1024).decode("utf-8", "replace")  # a FIFO or a device: refused, not read
    except OSError as exc:
        return {"$unknown": "unreadable: " + (exc.strerror or str(exc))}
    match = _GENCODE.search(head)
    if match is None:
        return None
    return {"version": match.group(1), "checks_runtime": "runtime_version" in head, "file": path}


def snapshot(paths=None, environ=None, prefix=None, site_dirs=None, user_site=None, cache=None):
    """The environment seen from `paths` (default: the import path without the running script's
    folder, see environment_path). `environ` (default os.environ) supplies
    PYTHONPATH, `prefix` (default sys.prefix) the environment's own lib folder,
    `site_dirs` and `user_site` (default: the `site` module's) the environment's site folders,
    `cache` (default: cache_folder() of this process's own environment, the user who runs tfdoctor,
    whatever `environ` says of the job's; "": none) the folder where RECORD verification keeps what it
    learns between runs."""
    explicit = paths is not None
    paths = environment_path() if paths is None else list(paths)
    environ = os.environ if environ is None else environ
    prefix = sys.prefix if prefix is None else prefix
    if explicit and site_dirs is None:
        site_dirs = [p for p in paths if p.endswith("site-packages")]  # a test's fake tree
    modules = {}
    dists = _scan(paths, modules)
    watched = {}
    for key in list(dists):
        info = dists[key]
        if key in TENSORFLOW_DISTS or key in WATCHED or key.startswith(WATCHED_PREFIXES):
            watched[key] = _detail(dict(info), paths, tensorflow=key in TENSORFLOW_DISTS, key=key, cache=cache)
        else:
            info["requires_dist"] = _requires_of(info.pop("dist_dir", None))
    tf_package = _find_package(paths, "tensorflow", "__init__.py")
    build_info_path = _find_package(paths, "tensorflow", "python", "platform", "build_info.py")
    gencode_path = _find_package(paths, *GENCODE_PROBE) if tf_package else None
    return {
        "executable": sys.executable,
        "version": python_version(),
        "implementation": python_implementation(),
        "prefix": prefix,
        "base_prefix": getattr(sys, "base_prefix", sys.prefix),
        "platform": sys.platform,
        "machine": _uname()[3],
        "marker_environment": marker_environment(),
        "path": paths,
        "path_origins": path_origins(paths, environ, site_dirs, user_site),
        "modules": modules,
        "distributions": {k: _listed(v) for k, v in sorted(dists.items())},
        "watched": watched,
        "tensorflow": {
            "package_dir": os.path.dirname(tf_package) if tf_package else None,
            "build_info": read_build_info(build_info_path) if build_info_path else None,
            "protobuf_gencode": read_gencode(gencode_path) if gencode_path else None,
        },
    }


if __name__ == "__main__":
    sys.stdout.write(json.dumps(snapshot(), sort_keys=True))
