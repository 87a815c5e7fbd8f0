"""The export's locations: the user's frames of torch-mlir's call-site
locations, and the step's text located at the user's lines."""

import os
import re

# Installed packages whose frames are never the model's own code.
_FRAMEWORK = ("torch", "torch_mlir", "functorch", "torchgen")


def _user_frames(frames):
    """The (file, line) frames of an export's location that are the user's:
    outside installed packages and ga-import, or else (a model shipped by a
    library, such as transformers') outside PyTorch, torch-mlir and
    ga-import."""
    here = os.path.dirname(os.path.abspath(__file__))
    ours = [f for f in frames if not f[0].startswith(here)]
    own = [f for f in ours if "site-packages" not in f[0] and
           "dist-packages" not in f[0]]
    if own:
        return own
    framework = tuple(f"-packages{os.sep}{p}{os.sep}" for p in _FRAMEWORK)
    return [f for f in ours if not any(p in f[0] for p in framework)]




def user_location(location):
    """' at FILE:LINE' of the first frame of an MLIR location (torch-mlir's
    call-site locations of the export, innermost first) that is the user's;
    '' when there is none."""
    user = _user_frames(re.findall(r'"([^"]+)":(\d+)', location))
    return f" at {user[0][0]}:{user[0][1]}" if user else ""




def _location_frames(text):
    """For the MLIR `text` printed with its locations: a function from the
    body of one `loc(...)` to its (file, line) frames, innermost first, the
    `#loc` aliases it refers to expanded in place."""
    aliases = dict(re.findall(r"^(#loc\d*) = loc\((.*)\)$", text,
                              re.MULTILINE))
    resolved = {}

    def frames(alias):
        if alias not in resolved:
            resolved[alias] = []  # a cycle ends here
            resolved[alias] = expand(aliases.get(alias, ""))
        return resolved[alias]

    def expand(body):
        found = []
        for match in re.finditer(r'"([^"]+)":(\d+)|(#loc\d*)', body):
            if match.group(3):
                found += frames(match.group(3))
            else:
                found.append((match.group(1), match.group(2)))
        return found
    return expand


def _loc_end(text, start):
    """The index of the `)` that closes the ` loc(` at `start` (balanced,
    outside string literals)."""
    depth, i, quoted = 0, start + 4, False
    while i < len(text):
        c = text[i]
        if quoted:
            if c == "\\":
                i += 1
            elif c == '"':
                quoted = False
        elif c == '"':
            quoted = True
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                break
        i += 1
    return i


def _user_locations(text, ignore=None):
    """The export's locations (torch-mlir's call sites of each op, as
    aliases after the module) replaced in place by the user's line that
    made the op (`loc("model.py":12:0)`; see _user_frames), or dropped
    where no frame is the user's: ga-opt's diagnostics on the step (a split
    refused, an op without a derivative) then name the model's or the
    loss's line. Frames in the file `ignore` (ga-import's own temporary
    module) are not the user's."""
    expand = _location_frames(text)
    text = re.sub(r"^#loc\d* = loc\(.*\)$\n?", "", text, flags=re.MULTILINE)
    out, at = [], 0
    while True:
        start = text.find(" loc(", at)
        if start < 0:
            break
        end = _loc_end(text, start)
        user = _user_frames([f for f in expand(text[start + 5:end])
                             if f[0] != ignore])
        out.append(text[at:start])
        if user:
            file = user[0][0].replace("\\", "\\\\").replace('"', '\\"')
            out.append(f' loc("{file}":{user[0][1]}:0)')
        at = end + 1
    out.append(text[at:])
    return "".join(out)
