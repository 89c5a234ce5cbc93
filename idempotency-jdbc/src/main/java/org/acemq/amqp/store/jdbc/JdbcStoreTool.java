package org.acemq.amqp.store.jdbc;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.function.Function;
import java.util.logging.Logger;
import javax.sql.DataSource;
import org.acemq.amqp.api.AcemqException;
import org.acemq.amqp.api.MessageIds;

/**
 * The operator's command line for a {@link JdbcIdempotencyStore} table: see which scopes it holds keys of, what the
 * store holds for a message key, and reset the attempt count of a dead-lettered message so that it can be re-driven.
 *
 * <pre>
 * java -cp acemq-idempotency-jdbc.jar:acemq-api.jar:slf4j-api.jar:postgresql.jar \
 *      org.acemq.amqp.store.jdbc.JdbcStoreTool reset-attempts \
 *      --url jdbc:postgresql://db:5432/app --user app --password-env APP_DB_PASSWORD  s:order-42 s:order-43
 * </pre>
 *
 * Commands: {@code scopes}, {@code keys --scope SCOPE}, {@code show KEY...} and {@code reset-attempts KEY...} (with
 * {@code --scope SCOPE}, each KEY is a key within that scope); {@code --help} prints the usage. The password is
 * never taken on the command line (it would show in the process list and the shell history): from an environment
 * variable ({@code --password-env}), a file ({@code --password-file}), or not at all. Nothing the tool prints holds
 * a password or the URL's query string. Exit status: 0 when every key was shown or reset, 1 when a key was not reset
 * (the reason is printed), 2 for a usage error, 3 when the database could not be used.
 *
 * <p>Package-private on purpose: it is a command, not API.
 */
final class JdbcStoreTool {

    static final int OK = 0;
    static final int NOT_RESET = 1;
    static final int USAGE = 2;
    static final int DATABASE = 3;
    static final int DEFAULT_LIMIT = 100;

    private static final String USAGE_TEXT = String.join("\n",
            "usage: java -cp <acemq-idempotency-jdbc, acemq-api, slf4j-api and PostgreSQL driver jars> \\",
            "           org.acemq.amqp.store.jdbc.JdbcStoreTool COMMAND --url JDBC_URL [options] [KEY...]",
            "",
            "commands:",
            "  scopes          list the scopes the table holds keys of, with counts (reads the whole table)",
            "  keys            list the keys of the scope given by --scope (at most --limit), with their state",
            "  show            print what the store holds for each key (state, attempts, lease, expiry, fingerprint)",
            "  reset-attempts  set the attempt count of each key back to 0, so that a dead-lettered message can be",
            "                  re-driven (moved back to its queue) and run again; a key that is confirmed, or whose",
            "                  lease is live, is left alone",
            "",
            "options:",
            "  --url URL               JDBC URL of the database, e.g. jdbc:postgresql://db:5432/app (required)",
            "  --user NAME             database user",
            "  --password-env VAR      read the password from environment variable VAR",
            "  --password-file FILE    read the password from the first line of FILE",
            "  --table NAME            the store's table, [schema.]name (default " + JdbcIdempotencyStore.DEFAULT_TABLE_NAME
                    + ")",
            "  --keys-from FILE        read more keys from FILE, one per line ('-' for standard input)",
            "  --scope SCOPE           keys: the scope to list; show, reset-attempts: each KEY is a key of this scope",
            "  --limit N               keys: list at most N keys (default " + DEFAULT_LIMIT + ")",
            "",
            "A key is the store's key of a message: <scope>|<typed key>, the scope being the subscription's (its address",
            "by default) with % written %25 and | written %7C, the typed key the AMQP message-id with a type prefix:",
            "s:<string>, n:<ulong>, u:<uuid>, b:<hex of binary>, or a business key (p:<property>=..., k:...); h:<sha-256",
            "hex> for keys longer than 512 characters (see docs/jdbc-store.md). With --scope, give the typed key only.",
            "There is no --password option: a password on the command line shows in the process list.",
            "",
            "exit status: 0 done for every key, 1 a key was not reset, 2 usage error, 3 database error");

    private final PrintStream out;
    private final PrintStream err;
    private final Function<String, String> env;

    JdbcStoreTool(PrintStream out, PrintStream err, Function<String, String> env) {
        this.out = out;
        this.err = err;
        this.env = env;
    }

    /**
     * @param args the command and its options
     */
    public static void main(String[] args) {
        System.exit(new JdbcStoreTool(System.out, System.err, System::getenv).run(args));
    }

    /** The parsed command line. */
    private record Options(String command, String url, String user, String password, String table,
                           List<String> keys, String scope, int limit) {
    }

    /** A command-line mistake, reported with the usage. */
    private static final class UsageException extends Exception {
        private static final long serialVersionUID = 1L;

        UsageException(String message) {
            super(message);
        }
    }

    /**
     * @param args the command line
     * @return the exit status
     */
    int run(String[] args) {
        Options options;
        try {
            if (args.length == 0 || List.of(args).contains("--help") || List.of(args).contains("-h")) {
                out.println(USAGE_TEXT);
                return args.length == 0 ? USAGE : OK;
            }
            options = parse(args);
        } catch (UsageException e) {
            err.println("error: " + e.getMessage());
            err.println();
            err.println(USAGE_TEXT);
            return USAGE;
        }
        JdbcIdempotencyStore store;
        try {
            store = JdbcIdempotencyStore.builder(new DriverDataSource(options.url, options.user, options.password))
                    .tableName(options.table).groupCommit(false).build();
        } catch (IllegalArgumentException e) {
            err.println("error: " + e.getMessage());
            return USAGE;
        }
        try {
            return switch (options.command) {
                case "scopes" -> scopes(store);
                case "keys" -> keys(store, options.scope, options.limit);
                case "show" -> show(store, options.keys);
                default -> reset(store, options.keys);
            };
        } catch (AcemqException | IllegalStateException e) {
            err.println("error: the store at " + redacted(options.url) + " (table " + options.table
                    + ") could not be used: " + e.getMessage());
            return DATABASE;
        }
    }

    private int scopes(JdbcIdempotencyStore store) {
        List<JdbcIdempotencyStore.ScopeCount> counts = store.scopes();
        if (counts.isEmpty()) {
            out.println("the table holds no keys");
        }
        for (JdbcIdempotencyStore.ScopeCount c : counts) {
            out.println((c.scope() == null ? "(keys without a scope)" : "scope " + MessageIds.printable(c.scope()))
                    + ": " + c.rows() + " keys: " + c.confirmed() + " confirmed, " + c.live() + " in progress, "
                    + c.retryable() + " released or lapsed, " + c.forgotten() + " forgotten (not yet purged)");
        }
        return OK;
    }

    private int keys(JdbcIdempotencyStore store, String scope, int limit) {
        Map<String, JdbcIdempotencyStore.Row> rows = store.keysOfScope(scope, limit);
        if (rows.isEmpty()) {
            out.println("scope " + MessageIds.printable(scope) + " has no keys in the table");
        }
        rows.forEach((key, row) -> out.println(MessageIds.printable(key) + ": " + describe(row)));
        if (rows.size() == limit) {
            out.println("(first " + limit + " keys; --limit N for more)");
        }
        return OK;
    }

    private int show(JdbcIdempotencyStore store, List<String> keys) {
        for (String key : keys) {
            out.println(MessageIds.printable(key) + ": " + describe(store.describe(key)));
        }
        return OK;
    }

    private int reset(JdbcIdempotencyStore store, List<String> keys) {
        int status = OK;
        for (String key : keys) {
            String shown = MessageIds.printable(key);
            JdbcIdempotencyStore.Row before = store.describe(key);
            if (store.resetAttempts(key)) {
                out.println(shown + ": reset (attempts were " + (before == null ? "?" : before.attempts())
                        + "); its next delivery is attempt 1");
                continue;
            }
            status = NOT_RESET;
            JdbcIdempotencyStore.Row row = store.describe(key);
            String why;
            if (row == null || !row.remembered()) {
                why = "the store knows nothing of this key (never claimed, or forgotten after its retention): "
                        + "there is no count to reset; check the key's prefix and spelling";
            } else if (row.state() == 1) {
                why = "it is confirmed (processed); a re-driven copy would be accepted as a duplicate without running"
                        + " the handler";
            } else if (row.state() == 0 && row.live()) {
                why = "a consumer holds a live lease on it until " + row.leaseUntil() + " (it is being processed)";
            } else {
                why = "it changed while the reset ran: " + describe(row) + "; run the command again";
            }
            out.println(shown + ": NOT reset: " + why);
        }
        return status;
    }

    private static String describe(JdbcIdempotencyStore.Row row) {
        if (row == null) {
            return "unknown (no row: never claimed, or purged)";
        }
        if (!row.remembered()) {
            return "forgotten (retention over since " + row.expiresAt() + "; purge deletes the row), attempts "
                    + row.attempts();
        }
        String state = switch (row.state()) {
            case 0 -> (row.live() ? "claimed, lease live until " + row.leaseUntil()
                    : "claimed, lease lapsed at " + row.leaseUntil()) + ", attempts " + row.attempts();
            case 1 -> "confirmed until " + row.expiresAt() + ", attempts " + row.attempts();
            default -> "released, attempts " + row.attempts() + ", remembered until " + row.expiresAt();
        };
        return state + ", fingerprint " + (row.fingerprint() == null ? "none" : MessageIds.printable(row.fingerprint()));
    }

    private Options parse(String[] args) throws UsageException {
        String command = args[0];
        if (!List.of("scopes", "keys", "show", "reset-attempts").contains(command)) {
            throw new UsageException("unknown command '" + MessageIds.printable(command)
                    + "'; expected scopes, keys, show or reset-attempts");
        }
        String scope = null;
        int limit = DEFAULT_LIMIT;
        String url = null;
        String user = null;
        String password = null;
        String table = JdbcIdempotencyStore.DEFAULT_TABLE_NAME;
        List<String> keys = new ArrayList<>();
        for (int i = 1; i < args.length; i++) {
            String arg = args[i];
            if (!arg.startsWith("--")) {
                keys.add(arg);
                continue;
            }
            if (arg.equals("--password")) {
                throw new UsageException("--password is not supported: a password on the command line shows in the "
                        + "process list; use --password-env VAR or --password-file FILE");
            }
            if (i + 1 >= args.length) {
                throw new UsageException(arg + " needs a value");
            }
            String value = args[++i];
            switch (arg) {
                case "--url" -> url = value;
                case "--user" -> user = value;
                case "--table" -> table = value;
                case "--password-env" -> {
                    password = env.apply(value);
                    if (password == null) {
                        throw new UsageException("--password-env: environment variable " + value + " is not set");
                    }
                }
                case "--password-file" -> password = firstLine(value);
                case "--keys-from" -> keys.addAll(lines(value));
                case "--scope" -> scope = value;
                case "--limit" -> limit = limit(value);
                default -> throw new UsageException("unknown option " + MessageIds.printable(arg));
            }
        }
        if (url == null) {
            throw new UsageException("--url is required");
        }
        if (!url.startsWith("jdbc:")) {
            throw new UsageException("--url must be a JDBC URL (jdbc:postgresql://host:port/database), but was "
                    + redacted(url));
        }
        if (scope != null) {
            try {
                MessageIds.escapeScope(scope);
            } catch (IllegalArgumentException e) {
                throw new UsageException("--scope '" + MessageIds.printable(scope) + "': " + e.getMessage());
            }
        }
        if (command.equals("scopes") || command.equals("keys")) {
            if (!keys.isEmpty()) {
                throw new UsageException(command + " takes no KEY");
            }
            if (command.equals("keys") && scope == null) {
                throw new UsageException("keys needs --scope SCOPE (the command scopes lists them)");
            }
            return new Options(command, url, user, password, table, List.of(), scope, limit);
        }
        if (keys.isEmpty()) {
            throw new UsageException("no KEY given");
        }
        List<String> storeKeys = new ArrayList<>(keys.size());
        for (String key : keys) {
            try {
                storeKeys.add(MessageIds.requireValid(scope == null ? key : MessageIds.scoped(scope, key)));
            } catch (IllegalArgumentException e) {
                throw new UsageException("KEY '" + MessageIds.printable(key) + "': " + e.getMessage());
            }
        }
        return new Options(command, url, user, password, table, List.copyOf(storeKeys), scope, limit);
    }

    private static int limit(String value) throws UsageException {
        try {
            int limit = Integer.parseInt(value);
            if (limit >= 1) {
                return limit;
            }
        } catch (NumberFormatException e) {
            // reported below
        }
        throw new UsageException("--limit must be a whole number of at least 1, but was '"
                + MessageIds.printable(value) + "'");
    }

    private static String firstLine(String file) throws UsageException {
        try (BufferedReader r = Files.newBufferedReader(Path.of(file), StandardCharsets.UTF_8)) {
            String line = r.readLine();
            if (line == null) {
                throw new UsageException("--password-file " + file + " is empty");
            }
            return line;
        } catch (IOException e) {
            throw new UsageException("--password-file " + file + " cannot be read: " + e.getMessage());
        }
    }

    private static List<String> lines(String file) throws UsageException {
        try {
            BufferedReader r = file.equals("-")
                    ? new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))
                    : Files.newBufferedReader(Path.of(file), StandardCharsets.UTF_8);
            List<String> keys = new ArrayList<>();
            for (String line = r.readLine(); line != null; line = r.readLine()) {
                if (!line.isBlank()) {
                    keys.add(line.strip());
                }
            }
            if (!file.equals("-")) {
                r.close();
            }
            return keys;
        } catch (IOException e) {
            throw new UsageException("--keys-from " + file + " cannot be read: " + e.getMessage());
        }
    }

    /** @return the URL without user information and without its query string (which may carry a password) */
    static String redacted(String url) {
        String shown = url;
        int query = shown.indexOf('?');
        if (query >= 0) {
            shown = shown.substring(0, query) + "?…";
        }
        int scheme = shown.indexOf("//");
        int at = shown.indexOf('@');
        if (scheme >= 0 && at > scheme) {
            shown = shown.substring(0, scheme + 2) + "…@" + shown.substring(at + 1);
        }
        return MessageIds.printable(shown);
    }

    /** Connections straight from the driver, one per operation: the tool runs a handful of statements. */
    private static final class DriverDataSource implements DataSource {
        private final String url;
        private final Properties properties = new Properties();

        DriverDataSource(String url, String user, String password) {
            this.url = url;
            if (user != null) {
                properties.setProperty("user", user);
            }
            if (password != null) {
                properties.setProperty("password", password);
            }
            properties.setProperty("ApplicationName", "acemq-jdbc-store-tool");
        }

        @Override
        public Connection getConnection() throws SQLException {
            return DriverManager.getConnection(url, properties);
        }

        @Override
        public Connection getConnection(String user, String password) throws SQLException {
            throw new SQLFeatureNotSupportedException("the tool's credentials are fixed");
        }

        @Override
        public PrintWriter getLogWriter() {
            return null;
        }

        @Override
        public void setLogWriter(PrintWriter writer) {
            // not used
        }

        @Override
        public void setLoginTimeout(int seconds) {
            // not used
        }

        @Override
        public int getLoginTimeout() {
            return 0;
        }

        @Override
        public Logger getParentLogger() throws SQLFeatureNotSupportedException {
            throw new SQLFeatureNotSupportedException();
        }

        @Override
        public <T> T unwrap(Class<T> type) throws SQLException {
            throw new SQLException("not a wrapper");
        }

        @Override
        public boolean isWrapperFor(Class<?> type) {
            return false;
        }

        @Override
        public String toString() {
            return "DriverDataSource[" + redacted(url) + "]";
        }
    }
}
