package graphsvc.neo4j;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

import org.neo4j.cli.AdminTool;
import org.neo4j.cli.ExecutionContext;
import org.neo4j.configuration.GraphDatabaseSettings;
import org.neo4j.dbms.api.DatabaseManagementService;
import org.neo4j.dbms.api.DatabaseManagementServiceBuilder;
import org.neo4j.graphdb.GraphDatabaseService;
import org.neo4j.graphdb.Result;
import org.neo4j.graphdb.Transaction;
import org.neo4j.io.ByteUnit;

/**
 * The launcher's {@code import} mode: Neo4j's offline batch importer (what
 * {@code neo4j-admin database import full} runs, from the {@code neo4j-import-tool} artifact) on
 * the launcher's home, from the files {@code graphsvc bulk-export} writes.
 *
 * <pre>
 *   java -jar graphsvc-neo4j.jar import --home DIR --from FILES_DIR [--replace true]
 * </pre>
 *
 * <p>It REPLACES the whole database {@code neo4j} of the home (Community has one user database):
 * it is for the first load of a fresh server, with the server of that home stopped. A database
 * that already holds any node is refused unless {@code --replace true} is given. FILES_DIR holds
 * {@code import.args}, one importer argument a line, naming the CSV files relative to FILES_DIR;
 * only the options graphsvc writes there are accepted. {@code --after=FILE} (not an importer option)
 * names Cypher statements for what the CSV importer cannot write: the next server start on the home
 * runs them before it reports ready (HOME/import-pending.cypher, then deleted; a statement that
 * returns a count {@code n} is repeated until it is 0).
 * Exit status: 0 imported, 1 the import
 * failed, 2 bad option, 3 refused (a database with data and no --replace, or files missing).
 */
final class BulkImport {

    /** The importer options import.args may hold (anything else is refused). */
    private static final List<String> ALLOWED = List.of(
            "nodes", "relationships", "array-delimiter", "multiline-fields", "multiline-fields-format", "after");
    /** Options of import.args whose value ends with a file name, resolved against FILES_DIR. */
    private static final List<String> WITH_FILES = List.of("nodes", "relationships", "multiline-fields", "after");

    private BulkImport() {}

    static int run(String[] args) throws Exception {
        Map<String, String> opts = parse(args);
        Path home = Path.of(Launcher.option(opts, "home", "GRAPHSVC_NEO4J_HOME", ".neo4j"))
                .toAbsolutePath().normalize();
        String from = opts.get("from");
        if (from == null) {
            throw new IllegalArgumentException("graphsvc-neo4j import: --from DIR is required "
                    + "(a directory written by `graphsvc bulk-export`)");
        }
        Path dir = Path.of(from).toAbsolutePath().normalize();
        boolean replace = Boolean.parseBoolean(opts.getOrDefault("replace", "false"));
        Path argsFile = dir.resolve("import.args");
        if (!Files.isRegularFile(argsFile)) {
            System.err.println("graphsvc-neo4j import: " + argsFile + " not found: write the files with "
                    + "`graphsvc bulk-export FILE " + dir + "` first");
            return 3;
        }
        List<String> importArgs = importerArgs(argsFile, dir);
        if (importArgs == null) {
            return 3;
        }
        Path after = null;
        for (String arg : List.copyOf(importArgs)) {
            if (arg.startsWith("--after=")) {
                after = Path.of(arg.substring("--after=".length()));
                importArgs.remove(arg);
            }
        }

        String dbName = GraphDatabaseSettings.DEFAULT_DATABASE_NAME;
        Path store = home.resolve("data").resolve("databases").resolve(dbName);
        if (hasFiles(store)) {
            long nodes = countNodes(home, dbName);
            if (nodes > 0 && !replace) {
                System.err.printf("graphsvc-neo4j import: refused: database '%s' in %s already holds %d "
                        + "nodes, and the bulk import REPLACES the whole database (every namespace). "
                        + "Import into a fresh home (GRAPHSVC_NEO4J_HOME), or pass --replace (scripts/neo4j.sh import DIR "
                        + "--replace; the jar: --replace true) to "
                        + "discard them.%n", dbName, home, nodes);
                return 3;
            }
            System.out.printf("graphsvc-neo4j import: database '%s' holds %d nodes; it is replaced%n",
                    dbName, nodes);
        }

        Path conf = home.resolve("conf");
        Files.createDirectories(conf);
        List<String> command = new ArrayList<>(List.of(
                "database", "import", "full",
                "--overwrite-destination=true",
                "--id-type=string",
                "--report-file=" + dir.resolve("import.report"),
                dbName)); // before the file options, which take any number of values
        command.addAll(importArgs);
        System.out.println("graphsvc-neo4j import: neo4j-admin " + String.join(" ", command));
        System.out.flush();
        long t0 = System.nanoTime();
        int status = AdminTool.execute(new ExecutionContext(home, conf), command.toArray(new String[0]));
        double seconds = (System.nanoTime() - t0) / 1e9;
        if (status != 0) {
            System.err.printf("graphsvc-neo4j import: the importer failed (exit %d) after %.1f s; "
                    + "see %s and the messages above%n", status, seconds, dir.resolve("import.report"));
            return 1;
        }
        System.out.printf("graphsvc-neo4j import: imported into %s in %.1f s%n", store, seconds);
        Path pending = pendingFile(home);
        if (after != null) {
            // Run by the first server start on this home, before it reports ready (see Launcher).
            Files.copy(after, pending, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
            System.out.println("graphsvc-neo4j import: " + pending.getFileName()
                    + " runs at the next start, before the server reports ready");
        } else {
            Files.deleteIfExists(pending);
        }
        return 0;
    }

    /** Where the import leaves the statements the next server start runs. */
    static Path pendingFile(Path home) {
        return home.resolve("import-pending.cypher");
    }

    /** The statements of FILE (separated by a semicolon at the end of a line; // comments), each
     * run in its own transaction, again while it returns a count {@code n} above 0. */
    static void runStatements(GraphDatabaseService db, Path file) throws IOException {
        List<String> statements = new ArrayList<>();
        StringBuilder current = new StringBuilder();
        for (String raw : Files.readAllLines(file, StandardCharsets.UTF_8)) {
            String line = raw.strip();
            if (line.isEmpty() || line.startsWith("//")) {
                continue;
            }
            if (line.endsWith(";")) {
                current.append(line, 0, line.length() - 1);
                statements.add(current.toString());
                current.setLength(0);
            } else {
                current.append(line).append('\n');
            }
        }
        if (!current.toString().isBlank()) {
            statements.add(current.toString());
        }
        for (String statement : statements) {
            while (true) {
                long n;
                try (Transaction tx = db.beginTx(); Result result = tx.execute(statement)) {
                    n = result.hasNext() && result.columns().contains("n")
                            ? ((Number) result.next().get("n")).longValue() : 0;
                    result.accept(row -> true);
                    tx.commit();
                }
                if (n <= 0) {
                    break;
                }
            }
        }
    }

    /** The home opened without any connector (the server is stopped): for checks and fix-ups. */
    private static DatabaseManagementService embedded(Path home) {
        return new DatabaseManagementServiceBuilder(home)
                .setConfig(GraphDatabaseSettings.pagecache_memory, ByteUnit.parse("128m"))
                .setConfig(GraphDatabaseSettings.logs_directory, home.resolve("logs"))
                .setConfig(GraphDatabaseSettings.preallocate_logical_logs, false)
                .build();
    }

    private static GraphDatabaseService available(DatabaseManagementService dbms, String dbName) {
        GraphDatabaseService db = dbms.database(dbName);
        if (!db.isAvailable(60_000)) {
            throw new IllegalStateException("graphsvc-neo4j import: database '" + dbName
                    + "' did not become available");
        }
        return db;
    }

    /** The importer arguments of import.args with their files resolved, or null (a message said why). */
    private static List<String> importerArgs(Path argsFile, Path dir) throws IOException {
        List<String> out = new ArrayList<>();
        for (String raw : Files.readAllLines(argsFile, StandardCharsets.UTF_8)) {
            String line = raw.strip();
            if (line.isEmpty() || line.startsWith("#")) {
                continue;
            }
            int eq = line.indexOf('=');
            String name = line.startsWith("--") && eq > 2 ? line.substring(2, eq) : "";
            if (!ALLOWED.contains(name)) {
                System.err.println("graphsvc-neo4j import: " + argsFile + ": option not allowed here: " + line);
                return null;
            }
            if (WITH_FILES.contains(name)) {
                int last = line.lastIndexOf('=');
                List<String> files = new ArrayList<>();
                for (String part : line.substring(last + 1).split(",")) {
                    Path file = dir.resolve(part).normalize();
                    if (!file.startsWith(dir) || !Files.isRegularFile(file)) {
                        System.err.println("graphsvc-neo4j import: " + argsFile + " names a file that is not in "
                                + dir + ": " + line);
                        return null;
                    }
                    files.add(file.toString());
                }
                line = line.substring(0, last + 1) + String.join(",", files);
            }
            out.add(line);
        }
        return out;
    }

    private static boolean hasFiles(Path dir) throws IOException {
        if (!Files.isDirectory(dir)) {
            return false;
        }
        try (Stream<Path> entries = Files.list(dir)) {
            return entries.findAny().isPresent();
        }
    }

    /** Nodes in the database, read by opening the home without any connector (the server is stopped). */
    private static long countNodes(Path home, String dbName) {
        DatabaseManagementService dbms = embedded(home);
        try {
            GraphDatabaseService db = available(dbms, dbName);
            try (Transaction tx = db.beginTx(); Result result = tx.execute("MATCH (n) RETURN count(n) AS n")) {
                return ((Number) result.next().get("n")).longValue();
            }
        } finally {
            dbms.shutdown();
        }
    }

    private static Map<String, String> parse(String[] args) {
        return Launcher.parseOptions(args, "graphsvc-neo4j import", "home|from|replace",
                " (usage: import --home DIR --from FILES_DIR [--replace true])");
    }
}
