// Build graphsvc's browser pages into graphsvc/api/static (run through scripts/build_web.sh).
//
//   static/graphiql/  index.html + React, ReactDOM, GraphiQL and its explorer plugin (the UMD builds
//                     from the pinned packages) + this project's page script and CSS
//   static/explore/   index.html + the explorer bundle (src/explore, with Cytoscape.js)
//   static/licenses/  THIRD_PARTY_NOTICES.txt: the license of every package shipped
//   static/build-info.json  the pinned versions, the files, and the hash of the sources built
//
// Every asset is named `<name>-<first 10 hex of its sha256>.<ext>`, so the server may let browsers
// cache it forever; the HTML pages name them and are never cached. Same sources, same bytes.

import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

import * as esbuild from "esbuild";

const WEB = path.dirname(fileURLToPath(import.meta.url));
const OUT = path.resolve(WEB, "..", "graphsvc", "api", "static");
const MODULES = path.join(WEB, "node_modules");
/** Inputs of the build; their hash goes into build-info.json (a test compares it with the tree). */
const SOURCES = ["package.json", "package-lock.json", "build.mjs", "tsconfig.json", "src"];
/** Where the pages are served from: /graphql and /explore, so assets are under static/. */
const PUBLIC_PREFIX = "static";

const sha256 = (data) => createHash("sha256").update(data).digest("hex");

function filesUnder(relative) {
  const absolute = path.join(WEB, relative);
  if (statSync(absolute).isDirectory()) {
    return readdirSync(absolute)
      .sort()
      .flatMap((name) => filesUnder(path.posix.join(relative, name)));
  }
  return [relative];
}

/** sha256 over `path\0sha256(content)\n` of every source file, sorted by path. */
function sourceHash() {
  const files = SOURCES.flatMap(filesUnder).sort();
  const hash = createHash("sha256");
  for (const file of files) {
    hash.update(`${file}\0${sha256(readFileSync(path.join(WEB, file)))}\n`);
  }
  return hash.digest("hex");
}

const written = {};

/** Write `data` as `<dir>/<name>-<hash>.<ext>`; returns its URL relative to the pages. */
function emit(dir, name, ext, data) {
  const file = `${name}-${sha256(data).slice(0, 10)}.${ext}`;
  mkdirSync(path.join(OUT, dir), { recursive: true });
  writeFileSync(path.join(OUT, dir, file), data);
  written[`${dir}/${file}`] = sha256(data);
  return `${PUBLIC_PREFIX}/${dir}/${file}`;
}

/** A vendor file without its sourceMappingURL comment (the maps are not shipped). */
function vendor(relative) {
  const text = readFileSync(path.join(MODULES, relative), "utf8");
  return Buffer.from(text.replace(/\n?\/[/*]# sourceMappingURL=[^\n]*\s*$/, "\n"));
}

function page(template, assets) {
  const html = readFileSync(path.join(WEB, template), "utf8").replace(/\{\{([\w.-]+)\}\}/g, (_, name) => {
    if (!(name in assets)) {
      throw new Error(`${template}: no asset named ${name}`);
    }
    return assets[name];
  });
  return Buffer.from(html);
}

function writePage(dir, data) {
  mkdirSync(path.join(OUT, dir), { recursive: true });
  writeFileSync(path.join(OUT, dir, "index.html"), data);
  written[`${dir}/index.html`] = sha256(data);
}

async function bundle(entry) {
  const result = await esbuild.build({
    entryPoints: [path.join(WEB, entry)],
    bundle: true,
    minify: true,
    format: "iife",
    target: ["es2020"],
    platform: "browser",
    legalComments: "eof",
    write: false,
    outdir: "out",
    logLevel: "warning",
    metafile: true,
  });
  const outputs = {};
  for (const file of result.outputFiles) {
    outputs[path.extname(file.path).slice(1)] = Buffer.from(file.contents);
  }
  return { outputs, inputs: Object.keys(result.metafile.inputs) };
}

/** The packages an esbuild bundle took code from (`node_modules/<name>/...` inputs). */
function bundledPackages(inputs) {
  const names = inputs
    .filter((input) => input.includes("node_modules/"))
    .map((input) => {
      const parts = input.split("node_modules/").pop().split("/");
      return parts[0].startsWith("@") ? `${parts[0]}/${parts[1]}` : parts[0];
    });
  return [...new Set(names)].sort();
}

function packageJson(dir) {
  return JSON.parse(readFileSync(path.join(dir, "package.json"), "utf8"));
}

/** Every non-dev package of the lockfile, installed, with its license text. */
function notices() {
  const lock = JSON.parse(readFileSync(path.join(WEB, "package-lock.json"), "utf8"));
  const entries = [];
  for (const [location, info] of Object.entries(lock.packages)) {
    if (!location || info.dev) {
      continue;
    }
    const dir = path.join(WEB, location);
    if (!existsSync(dir)) {
      continue; // an optional dependency not installed here
    }
    const meta = packageJson(dir);
    const licenseFile = readdirSync(dir)
      .sort()
      .find((name) => /^(licen[cs]e|copying)(\.(md|txt))?$/i.test(name));
    const text = licenseFile
      ? readFileSync(path.join(dir, licenseFile), "utf8").trim()
      : `(the package ships no license file; its package.json says: ${meta.license ?? "nothing"})`;
    entries.push({ id: `${meta.name}@${meta.version}`, license: meta.license ?? "see text", text });
  }
  entries.sort((a, b) => a.id.localeCompare(b.id));
  const unique = entries.filter((entry, index) => index === 0 || entries[index - 1].id !== entry.id);
  const header = [
    "Third-party software shipped in graphsvc/api/static (the GraphiQL page and the explorer).",
    "Built from web/package-lock.json by scripts/build_web.sh. Each package's license follows.",
    "",
  ];
  const body = unique.map(
    (entry) => `${"=".repeat(100)}\n${entry.id} (${entry.license})\n${"=".repeat(100)}\n\n${entry.text}\n`,
  );
  return { text: Buffer.from(`${header.join("\n")}\n${body.join("\n")}`), packages: unique.map((e) => e.id) };
}

async function main() {
  for (const dir of ["graphiql", "explore", "licenses"]) {
    rmSync(path.join(OUT, dir), { recursive: true, force: true });
  }
  rmSync(path.join(OUT, "build-info.json"), { force: true });

  const licenses = notices();
  const noticesUrl = emit("licenses", "THIRD_PARTY_NOTICES", "txt", licenses.text);

  const graphiqlPage = await bundle("src/graphiql/main.ts");
  const graphiqlAssets = {
    "react.js": emit("graphiql", "react.production.min", "js", vendor("react/umd/react.production.min.js")),
    "react-dom.js": emit("graphiql", "react-dom.production.min", "js", vendor("react-dom/umd/react-dom.production.min.js")),
    "graphiql.js": emit("graphiql", "graphiql.min", "js", vendor("graphiql/graphiql.min.js")),
    "graphiql.css": emit("graphiql", "graphiql.min", "css", vendor("graphiql/graphiql.min.css")),
    "explorer.js": emit("graphiql", "plugin-explorer", "js", vendor("@graphiql/plugin-explorer/dist/index.umd.js")),
    "explorer.css": emit("graphiql", "plugin-explorer", "css", vendor("@graphiql/plugin-explorer/dist/style.css")),
    "page.js": emit("graphiql", "page", "js", graphiqlPage.outputs.js),
    "page.css": emit("graphiql", "page", "css", readFileSync(path.join(WEB, "src/graphiql/page.css"))),
    notices: noticesUrl,
  };
  writePage("graphiql", page("src/graphiql/index.html", graphiqlAssets));

  const explorer = await bundle("src/explore/main.ts");
  const exploreAssets = {
    "app.js": emit("explore", "app", "js", explorer.outputs.js),
    "app.css": emit("explore", "app", "css", explorer.outputs.css),
    notices: noticesUrl,
  };
  writePage("explore", page("src/explore/index.html", exploreAssets));

  const versions = {};
  for (const name of ["react", "react-dom", "graphiql", "@graphiql/plugin-explorer", "cytoscape"]) {
    versions[name] = packageJson(path.join(MODULES, name)).version;
  }
  const info = {
    comment: "Written by scripts/build_web.sh (web/build.mjs); do not edit.",
    sourceHash: sourceHash(),
    versions,
    explorerBundledPackages: bundledPackages(explorer.inputs),
    thirdPartyPackages: licenses.packages,
    files: Object.fromEntries(Object.entries(written).sort(([a], [b]) => a.localeCompare(b))),
  };
  writeFileSync(path.join(OUT, "build-info.json"), `${JSON.stringify(info, null, 2)}\n`);
  for (const [file, digest] of Object.entries(info.files)) {
    const size = statSync(path.join(OUT, file)).size;
    console.log(`${file.padEnd(58)} ${String(size).padStart(9)} bytes  ${digest.slice(0, 10)}`);
  }
}

await main();
