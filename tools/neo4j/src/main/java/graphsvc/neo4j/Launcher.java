package graphsvc.neo4j;

import java.net.InetAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.CountDownLatch;

import org.neo4j.configuration.GraphDatabaseSettings;
import org.neo4j.configuration.connectors.BoltConnector;
import org.neo4j.configuration.connectors.HttpConnector;
import org.neo4j.configuration.helpers.SocketAddress;
import org.neo4j.dbms.api.DatabaseManagementService;
import org.neo4j.dbms.api.DatabaseManagementServiceBuilder;
import org.neo4j.io.ByteUnit;

/**
 * Starts a real Neo4j 5.26 Community server (Bolt + HTTP + Browser) for graphsvc development and CI,
 * keeps it up until SIGTERM/SIGINT, then shuts it down cleanly.
 *
 * <p>Options (command line beats environment beats default):
 * <pre>
 *   --home DIR       GRAPHSVC_NEO4J_HOME       .neo4j (relative to the working directory)
 *   --host HOST      GRAPHSVC_NEO4J_HOST       127.0.0.1 (must be a loopback address)
 *   --bolt-port N    GRAPHSVC_NEO4J_BOLT_PORT  7687
 *   --http-port N    GRAPHSVC_NEO4J_HTTP_PORT  7474
 *   --pagecache SIZE GRAPHSVC_NEO4J_PAGECACHE  256m
 * </pre>
 * The JVM heap (GRAPHSVC_NEO4J_HEAP) is set by scripts/neo4j.sh with -Xms/-Xmx.
 * {@code import --home DIR --from FILES_DIR} runs the offline bulk importer instead (see BulkImport).
 * Neo4j's own logs go to HOME/logs (debug.log, neo4j.log), not to stdout.
 */
public final class Launcher {

    private Launcher() {}

    public static void main(String[] args) throws Exception {
        try {
            if (args.length > 0 && args[0].equals("import")) { // offline bulk import: see BulkImport
                System.exit(BulkImport.run(java.util.Arrays.copyOfRange(args, 1, args.length)));
            }
            run(args);
        } catch (IllegalArgumentException e) { // bad option or setting value: one line, no stack trace
            System.err.println(e.getMessage());
            System.exit(2);
        }
    }

    private static void run(String[] args) throws Exception {
        Map<String, String> opts = parseArgs(args);
        Path home = Path.of(option(opts, "home", "GRAPHSVC_NEO4J_HOME", ".neo4j")).toAbsolutePath().normalize();
        String host = option(opts, "host", "GRAPHSVC_NEO4J_HOST", "127.0.0.1");
        int boltPort = Integer.parseInt(option(opts, "bolt-port", "GRAPHSVC_NEO4J_BOLT_PORT", "7687"));
        int httpPort = Integer.parseInt(option(opts, "http-port", "GRAPHSVC_NEO4J_HTTP_PORT", "7474"));
        String pageCache = option(opts, "pagecache", "GRAPHSVC_NEO4J_PAGECACHE", "256m");

        // Authentication is disabled below, so refuse anything but loopback: nobody off this machine may connect.
        if (!InetAddress.getByName(host).isLoopbackAddress()) {
            throw new IllegalArgumentException("graphsvc-neo4j: host must be a loopback address (auth is disabled): " + host);
        }
        Files.createDirectories(home);

        DatabaseManagementService managementService = new DatabaseManagementServiceBuilder(home)
                .setConfig(BoltConnector.enabled, true)
                .setConfig(BoltConnector.listen_address, new SocketAddress(host, boltPort))
                .setConfig(BoltConnector.advertised_address, new SocketAddress(host, boltPort))
                .setConfig(HttpConnector.enabled, true)
                .setConfig(HttpConnector.listen_address, new SocketAddress(host, httpPort))
                .setConfig(HttpConnector.advertised_address, new SocketAddress(host, httpPort))
                // No authentication: a local development/CI server that listens on loopback only (checked above).
                .setConfig(GraphDatabaseSettings.auth_enabled, false)
                .setConfig(GraphDatabaseSettings.pagecache_memory, ByteUnit.parse(pageCache))
                .setConfig(GraphDatabaseSettings.logs_directory, home.resolve("logs"))
                // Don't reserve 256 MiB of transaction log per database up front (a fresh home stays ~10 MB).
                .setConfig(GraphDatabaseSettings.preallocate_logical_logs, false)
                // Keep about 1 GB of transaction logs, not the default two days of them: a
                // benchmark's half hour of writes and erases left 6.6 GB. No backups or cluster
                // members read them here; recovery needs only those since the last checkpoint.
                .setConfig(GraphDatabaseSettings.keep_logical_logs, "1G size")
                .build();

        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            System.out.println("graphsvc-neo4j: stopping");
            managementService.shutdown();
            System.out.println("graphsvc-neo4j: stopped");
            stopped.countDown();
        }, "graphsvc-neo4j-shutdown"));

        String dbName = GraphDatabaseSettings.DEFAULT_DATABASE_NAME;
        if (!managementService.database(dbName).isAvailable(120_000)) {
            System.err.println("graphsvc-neo4j: database '" + dbName + "' did not become available");
            System.exit(1);
        }
        // After a bulk import (BulkImport): what the CSV importer could not write, before "ready".
        Path pending = BulkImport.pendingFile(home);
        if (Files.isRegularFile(pending)) {
            long t0 = System.nanoTime();
            BulkImport.runStatements(managementService.database(dbName), pending);
            Files.delete(pending);
            System.out.printf("graphsvc-neo4j: ran %s after the bulk import in %.1f s%n",
                    pending.getFileName(), (System.nanoTime() - t0) / 1e9);
        }
        System.out.printf("graphsvc-neo4j: home %s, page cache %s, max heap %dm%n",
                home, pageCache, Runtime.getRuntime().maxMemory() / (1024 * 1024));
        System.out.printf("graphsvc-neo4j: ready bolt://%s:%d http://%s:%d%n", host, boltPort, host, httpPort);
        System.out.flush();

        stopped.await(); // stay up until SIGTERM/SIGINT runs the shutdown hook
    }

    static String option(Map<String, String> opts, String name, String envVar, String fallback) {
        String value = opts.get(name);
        if (value == null || value.isBlank()) {
            value = System.getenv(envVar);
        }
        return value == null || value.isBlank() ? fallback : value.trim();
    }

    private static Map<String, String> parseArgs(String[] args) {
        return parseOptions(args, "graphsvc-neo4j", "home|host|bolt-port|http-port|pagecache", "");
    }

    /**
     * {@code --name value} or {@code --name=value} options into a map; {@code program} starts every
     * error message, {@code allowed} is a regex of the option names, {@code usage} ends the message
     * for an unknown option.
     */
    static Map<String, String> parseOptions(String[] args, String program, String allowed, String usage) {
        Map<String, String> opts = new HashMap<>();
        for (int i = 0; i < args.length; i++) {
            String arg = args[i];
            if (!arg.startsWith("--")) {
                throw new IllegalArgumentException(program + ": unexpected argument: " + arg);
            }
            int eq = arg.indexOf('=');
            if (eq > 0) {
                opts.put(arg.substring(2, eq), arg.substring(eq + 1));
            } else if (i + 1 < args.length) {
                opts.put(arg.substring(2), args[++i]);
            } else {
                throw new IllegalArgumentException(program + ": missing value for " + arg);
            }
        }
        for (String key : opts.keySet()) {
            if (!key.matches(allowed)) {
                throw new IllegalArgumentException(program + ": unknown option --" + key + usage);
            }
        }
        return opts;
    }
}
