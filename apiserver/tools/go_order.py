#!/usr/bin/env python3
"""Generates apiserver/src/go_order/generated.rs: the Go struct field order of every
built-in kind the server serves, read from the Go types of Kubernetes' own repositories.

kube-apiserver writes JSON with Go's encoding/json, which writes a struct's fields in
declaration order (embedded structs flattened where they are declared) and a map's keys
sorted. This script reads the `types*.go` files of the packages below at one tag, follows
every field type from the kinds (structs embedding `metav1.TypeMeta`), and writes one
`Shape` per struct reached, plus `kind_shape`, which finds a kind's shape from its
`apiVersion` and `kind`.

Usage (each argument a git directory, e.g. from `git clone --bare`):

    python3 apiserver/tools/go_order.py --api DIR --apimachinery DIR \
        --apiextensions-apiserver DIR --kube-aggregator DIR [--tag v0.32.9] \
        > apiserver/src/go_order/generated.rs

The output is formatted with rustfmt when it is on the PATH.
"""

import argparse
import re
import shutil
import subprocess
import sys

# The Kubernetes version the server imitates (kubernetes/api and its sibling repositories
# tag v0.X.Y for Kubernetes 1.X.Y).
DEFAULT_TAG = "v0.32.9"

# Served group/versions of kubernetes/api (directory names), and the aggregated discovery
# documents' group.
API_PACKAGES = [
    "core/v1", "admissionregistration/v1", "apidiscovery/v2", "apidiscovery/v2beta1",
    "apps/v1", "authentication/v1", "authorization/v1", "autoscaling/v1", "autoscaling/v2",
    "batch/v1", "certificates/v1", "coordination/v1", "discovery/v1", "events/v1",
    "flowcontrol/v1", "networking/v1", "node/v1", "policy/v1", "rbac/v1", "scheduling/v1",
    "storage/v1",
]

# Structs with their own MarshalJSON: written as the value they hold, not field by field.
# The `JSONSchemaPropsOr...` unions hold a schema (or a bool or list), written as it.
CUSTOM_MARSHALERS = {
    ("k8s.io/apimachinery/pkg/apis/meta/v1", "FieldsV1"): None,
    ("k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1", "JSON"): None,
    ("k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1", "JSONSchemaPropsOrArray"):
        "JSONSchemaProps",
    ("k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1", "JSONSchemaPropsOrBool"):
        "JSONSchemaProps",
    ("k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1",
     "JSONSchemaPropsOrStringArray"): "JSONSchemaProps",
}

# metav1's kinds are written under these apiVersions (a Status as `v1`, a Table or
# PartialObjectMetadata as `meta.k8s.io/v1`).
META_API_VERSIONS = ["v1", "meta.k8s.io/v1"]


class Package:
    """The struct and named-type declarations of one Go package."""

    def __init__(self, import_path, api_versions, sources):
        self.import_path = import_path
        self.api_versions = api_versions
        self.structs = {}  # name -> [(json key or None for inline, go name, type, file imports)]
        self.named = {}  # name -> (type expression, file imports)
        self.order = []  # struct names in declaration order
        for text in sources:
            self.parse(text)

    def parse(self, text):
        text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
        imports = parse_imports(text)
        for match in re.finditer(
            r"^type\s+(\w+)\s+struct\s*\{(\}|\n.*?^\})", text, re.S | re.M
        ):
            name, body = match.group(1), match.group(2)
            self.structs[name] = [field + (imports,) for field in parse_fields(body)]
            self.order.append(name)
        for match in re.finditer(r"^type\s+(\w+)\s+([^\s{]+)\s*$", text, re.M):
            self.named[match.group(1)] = (match.group(2), imports)


def parse_imports(text):
    """The file's imports: package alias -> import path."""
    imports = {}
    block = re.search(r"^import\s*\((.*?)^\)", text, re.S | re.M)
    lines = block.group(1).splitlines() if block else []
    lines += re.findall(r"^import\s+(.*)$", text, re.M)
    for line in lines:
        match = re.match(r'\s*(\w+)?\s*"([^"]+)"', line)
        if match:
            path = match.group(2)
            imports[match.group(1) or path.rsplit("/", 1)[-1]] = path
    return imports


def parse_fields(body):
    """A struct body's fields: (json key, or None when inlined; Go name; type)."""
    fields = []
    for line in body.splitlines():
        tag = re.search(r"`([^`]*)`", line)
        code = line[: tag.start()] if tag else line
        code = code.split("//", 1)[0].strip()
        if not code:
            continue
        parts = code.split()
        if len(parts) == 1:  # embedded: `metav1.TypeMeta`, `*T`
            go_name, go_type = parts[0].lstrip("*").rsplit(".", 1)[-1], parts[0]
            embedded = True
        else:
            go_name, go_type = parts[0], parts[1]
            embedded = False
        if not go_name[0].isupper():
            continue  # unexported: encoding/json skips it
        json_tag = re.search(r'json:"([^"]*)"', tag.group(1)) if tag else None
        key = json_tag.group(1).split(",")[0] if json_tag else ""
        if key == "-":
            continue
        if not key:
            key = None if embedded else go_name
        fields.append((key, go_name, go_type))
    return fields


def read(git_dir, tag, path):
    return subprocess.run(
        ["git", "-C", git_dir, "show", f"{tag}:{path}"],
        check=True, capture_output=True, text=True,
    ).stdout


def type_sources(git_dir, tag, directory):
    names = subprocess.run(
        ["git", "-C", git_dir, "ls-tree", "--name-only", f"{tag}:{directory}"],
        check=True, capture_output=True, text=True,
    ).stdout.split()
    return [
        read(git_dir, tag, f"{directory}/{name}")
        for name in names
        if re.fullmatch(r"types\w*\.go", name) and "swagger" not in name
    ]


def group_name(git_dir, tag, directory):
    register = read(git_dir, tag, f"{directory}/register.go")
    return re.search(r'GroupName\s*=\s*"([^"]*)"', register).group(1)


def api_version(group, version):
    return f"{group}/{version}" if group else version


def commit_of(git_dir, tag):
    return subprocess.run(
        ["git", "-C", git_dir, "rev-parse", f"{tag}^{{commit}}"],
        check=True, capture_output=True, text=True,
    ).stdout.strip()


def load(args):
    packages = {}

    def add(git_dir, import_path, directory, versions):
        sources = type_sources(git_dir, args.tag, directory)
        packages[import_path] = Package(import_path, versions, sources)

    for directory in API_PACKAGES:
        version = directory.rsplit("/", 1)[1]
        group = group_name(args.api, args.tag, directory)
        add(args.api, f"k8s.io/api/{directory}", directory, [api_version(group, version)])
    add(args.apimachinery, "k8s.io/apimachinery/pkg/apis/meta/v1", "pkg/apis/meta/v1",
        META_API_VERSIONS)
    directory = "pkg/apis/apiextensions/v1"
    group = group_name(args.apiextensions_apiserver, args.tag, directory)
    add(args.apiextensions_apiserver, "k8s.io/apiextensions-apiserver/" + directory,
        directory, [api_version(group, "v1")])
    directory = "pkg/apis/apiregistration/v1"
    group = group_name(args.kube_aggregator, args.tag, directory)
    add(args.kube_aggregator, "k8s.io/kube-aggregator/" + directory, directory,
        [api_version(group, "v1")])
    return packages


class Generator:
    """Follows types from the kinds and names one Rust static per struct reached."""

    def __init__(self, packages):
        self.packages = packages
        self.statics = {}  # (import path, struct) -> static name
        self.maps = {}  # static of a map's value -> static of the map
        self.pending = []

    def static_name(self, package, struct):
        key = (package.import_path, struct)
        if key not in self.statics:
            short = package.import_path
            for prefix in ("k8s.io/api/", "k8s.io/apimachinery/pkg/apis/",
                           "k8s.io/apiextensions-apiserver/pkg/apis/",
                           "k8s.io/kube-aggregator/pkg/apis/"):
                short = short.removeprefix(prefix)
            snake = re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", struct)
            self.statics[key] = re.sub(r"\W", "_", f"{short}_{snake}").upper()
            self.pending.append(key)
        return self.statics[key]

    def shape_of_type(self, package, go_type, imports):
        """The static naming the shape of a Go type expression's JSON, or None."""
        go_type = go_type.lstrip("*")
        if go_type.startswith("[]"):
            return None if go_type == "[]byte" else self.shape_of_type(
                package, go_type[2:], imports)
        if go_type.startswith("map["):
            values = self.shape_of_type(package, go_type[go_type.index("]") + 1:], imports)
            if values is None:
                return None
            return self.maps.setdefault(values, f"MAP_OF_{values}")
        if "." in go_type:
            alias, name = go_type.split(".", 1)
            package = self.packages.get(imports.get(alias))
            if package is None:
                return None  # resource.Quantity, intstr.IntOrString, runtime.RawExtension
        else:
            name = go_type
        if (package.import_path, name) in CUSTOM_MARSHALERS:
            held = CUSTOM_MARSHALERS[(package.import_path, name)]
            return held and self.static_name(package, held)
        if name in package.structs:
            return self.static_name(package, name)
        if name in package.named:
            expression, named_imports = package.named[name]
            return self.shape_of_type(package, expression, named_imports)
        return None  # string, bool, ints, and types such as metav1.Time declared elsewhere

    def fields_of(self, package, struct):
        """A struct's JSON keys in order, embedded structs flattened, with their shapes."""
        fields = []
        for key, _go_name, go_type, imports in package.structs[struct]:
            if key is None:
                inner_package, inner = self.resolve(package, go_type.lstrip("*"), imports)
                fields += self.fields_of(inner_package, inner)
            else:
                fields.append((key, self.shape_of_type(package, go_type, imports)))
        return fields

    def resolve(self, package, go_type, imports):
        if "." in go_type:
            alias, name = go_type.split(".", 1)
            return self.packages[imports[alias]], name
        return package, go_type

    def kinds(self):
        """(apiVersion, kind, static) for every struct embedding metav1.TypeMeta."""
        found = []
        for package in self.packages.values():
            for struct in package.order:
                embeds = [f[2] for f in package.structs[struct] if f[0] is None]
                if any(t.endswith("TypeMeta") for t in embeds):
                    static = self.static_name(package, struct)
                    found += [(version, struct, static) for version in package.api_versions]
        return found

    def generate(self, header):
        kinds = self.kinds()
        shapes = []
        while self.pending:
            import_path, struct = self.pending.pop(0)
            package = self.packages[import_path]
            fields = self.fields_of(package, struct)
            shapes.append((self.statics[(import_path, struct)], import_path, struct, fields))
        out = [header, "use crate::json_order::Shape;\n"]
        for static, import_path, struct, fields in sorted(shapes):
            entries = ", ".join(
                f'("{key}", {f"Some(&{shape})" if shape else "None"})' for key, shape in fields)
            out.append(f"/// `{import_path}.{struct}`.")
            out.append(f"static {static}: Shape = Shape {{ fields: &[{entries}], values: None }};")
        for values, static in sorted(self.maps.items(), key=lambda item: item[1]):
            out.append(f"/// A Go map of `{values}`s: its keys sorted.")
            out.append(f"static {static}: Shape = Shape {{ fields: &[], values: Some(&{values}) }};")
        out.append("\n/// The Go struct shape of a built-in kind, from its `apiVersion` and `kind`.")
        out.append("pub fn kind_shape(api_version: &str, kind: &str) -> Option<&'static Shape> {")
        out.append("    let shape = match (api_version, kind) {")
        seen = set()
        for version, kind, static in kinds:
            if (version, kind) not in seen:
                seen.add((version, kind))
                out.append(f'        ("{version}", "{kind}") => &{static},')
        out.append("        _ => return None,\n    };\n    Some(shape)\n}")
        return "\n".join(out) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--api", required=True)
    parser.add_argument("--apimachinery", required=True)
    parser.add_argument("--apiextensions-apiserver", required=True)
    parser.add_argument("--kube-aggregator", required=True)
    parser.add_argument("--tag", default=DEFAULT_TAG)
    args = parser.parse_args()
    packages = load(args)
    commits = ", ".join(
        f"kubernetes/{name} {commit_of(getattr(args, name.replace('-', '_')), args.tag)}"
        for name in ("api", "apimachinery", "apiextensions-apiserver", "kube-aggregator"))
    header = (
        "//! Go struct field order of the served built-in kinds, generated by\n"
        f"//! `apiserver/tools/go_order.py` from the Go types at {args.tag} ({commits}).\n"
        "//! Do not edit: run the script again.\n"
    )
    code = Generator(packages).generate(header)
    if shutil.which("rustfmt"):
        code = subprocess.run(["rustfmt", "--edition", "2024"], input=code,
                              capture_output=True, text=True, check=True).stdout
    sys.stdout.write(code)


if __name__ == "__main__":
    main()
