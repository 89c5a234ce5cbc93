package org.acemq.amqp.benchmarks.e2e;

import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The rows of the throughput table ("modes"): their names, the groups {@code --modes} accepts, and the defaults of
 * each durability. A mode name ends in its handler thread count.
 *
 * <ul>
 * <li>{@code raw}, {@code raw-poolN}: raw protonj2 with manual accept (always measured: every ratio needs them)</li>
 * <li>{@code memory-N}: AceMQ with the in-memory store</li>
 * <li>{@code spring-N}: Spring AMQP's protonj2 listener container, autoAccept off</li>
 * <li>{@code camel-memory-N}, {@code camel-jdbc-N}: Camel's idempotent consumer with its in-memory / JDBC
 *     repository</li>
 * <li>{@code postgres-default-N}: AceMQ with JdbcIdempotencyStore built with its defaults</li>
 * <li>{@code postgres-tuned-N}: AceMQ with JdbcIdempotencyStore in the setting of {@code --pg-tuned-*}</li>
 * <li>{@code postgres-batchB-N}: AceMQ with JdbcIdempotencyStore built with its defaults and a batch handler that gets
 *     up to B messages per call ({@code Subscription.batchBuilder}, {@code batchSize(B)}); group {@code batch}
 *     measures {@code postgres-batch100-4} beside {@code postgres-default-4}</li>
 * <li>{@code postgres-tx-N}: AceMQ with JdbcIdempotencyStore built with its defaults and a {@code JdbcTransactionalHandler}
 *     that writes one business row per message (consume only); {@code postgres-tx-send-N}: the same handler also
 *     sending one message per message through the envelope (the JDBC transactional outbox, then the runtime's
 *     dispatcher); {@code postgres-send-N}: store defaults and a plain handler that sends one message per message
 *     (sent after the handler, before the confirm), against {@code postgres-default-N}. Group {@code send} measures
 *     the four with 4 handler threads</li>
 * <li>{@code memory-fp-off-N}, {@code postgres-default-fp-off-N}, {@code postgres-tuned-fp-off-N}: the same AceMQ row
 *     with {@code Fingerprint.off()} (the rows without it run the default, {@code Fingerprint.body()})</li>
 * <li>{@code mariadb-default-N}: AceMQ with JdbcIdempotencyStore's defaults on a durable private MariaDB;
 *     {@code camel-mariadb-N}: Camel's JDBC repository on the same MariaDB</li>
 * <li>{@code redis-default-N}: AceMQ with RedisIdempotencyStore's defaults on a private standalone redis-server
 *     (AOF, appendfsync everysec); {@code redis-clusterM-N}: the same on a private Redis Cluster of M masters</li>
 * </ul>
 *
 * Groups: {@code memory}, {@code spring}, {@code camel}, {@code postgres}, {@code peers} (spring + camel),
 * {@code mariadb} (AceMQ and Camel on MariaDB), {@code redis} (standalone), {@code redis-cluster} (1 and 3 masters),
 * {@code stores} (the last three), {@code batch} (batches of 100 and single messages on PostgreSQL), {@code send} (one
 * send per message against consume only, on PostgreSQL).
 * {@code --fingerprint on,off} runs each AceMQ row of the phase with the fingerprint on and off, side by side;
 * {@code --fingerprint off} only off ({@link #withFingerprint}).
 */
final class Modes {

    /** The raw protonj2 baselines, measured in every phase. */
    static final List<String> BASELINES = List.of("raw", "raw-pool4");

    private static final Pattern NAME = Pattern.compile(
            "(raw|raw-pool(\\d+)|memory-(?:fp-off-)?(\\d+)|spring-(\\d+)|camel-memory-(\\d+)|camel-jdbc-(\\d+)"
                    + "|postgres-default-(?:fp-off-)?(\\d+)|postgres-tuned-(?:fp-off-)?(\\d+)"
                    + "|postgres-batch[1-9]\\d*-(?:fp-off-)?(\\d+)"
                    + "|postgres-tx(?:-send)?-(?:fp-off-)?(\\d+)|postgres-send-(?:fp-off-)?(\\d+)"
                    + "|mariadb-default-(\\d+)|camel-mariadb-(\\d+)|redis-default-(\\d+)"
                    + "|redis-cluster[1-9]\\d*-(\\d+))");

    /** The rows of the store groups, each with 4 handler threads (as {@code postgres-default-4}). */
    static final List<String> MARIADB = List.of("mariadb-default-4", "camel-mariadb-4");
    static final List<String> REDIS = List.of("redis-default-4");
    static final List<String> REDIS_CLUSTER = List.of("redis-cluster1-4", "redis-cluster3-4");
    /** A batch handler's row and the single-message row it is compared with, on durable PostgreSQL. */
    static final List<String> BATCH = List.of("postgres-default-4", "postgres-batch100-4");
    /**
     * The sending rows, each right after the consume-only row it is compared with, on durable PostgreSQL: the plain
     * handler's direct send, then the transactional handler's send through the outbox.
     */
    static final List<String> SEND = List.of("postgres-default-4", "postgres-send-4", "postgres-tx-4",
            "postgres-tx-send-4");

    /** The infix of a row run with {@code Fingerprint.off()}. */
    private static final String FP_OFF = "fp-off-";

    private Modes() {
    }

    /**
     * @param durable the phase
     * @param tunedThreads handler threads of the tuned PostgreSQL row
     * @return the rows a phase measures when {@code --modes} is not given
     */
    static List<String> defaults(boolean durable, int tunedThreads) {
        List<String> modes = new ArrayList<>(List.of("memory-1", "memory-4", "spring-1", "spring-4"));
        if (durable) {
            modes.addAll(List.of("camel-memory-4", "camel-jdbc-4", "postgres-default-4",
                    "postgres-tuned-" + tunedThreads));
            modes.addAll(MARIADB);
            modes.addAll(REDIS);
            modes.addAll(REDIS_CLUSTER);
        }
        return modes;
    }

    /**
     * @param requested names and groups from {@code --modes}, or null for the phase's defaults
     * @param durable the phase
     * @param tunedThreads handler threads of the tuned PostgreSQL row
     * @param postgres false to drop every row that needs PostgreSQL ({@code --no-postgres})
     * @return the baselines first, then the requested rows, each once
     * @throws IllegalArgumentException for an unknown name
     */
    static List<String> resolve(List<String> requested, boolean durable, int tunedThreads, boolean postgres) {
        Set<String> out = new LinkedHashSet<>(BASELINES);
        for (String m : requested == null ? defaults(durable, tunedThreads) : requested) {
            String name = m.trim();
            switch (name) {
                case "memory" -> out.addAll(List.of("memory-1", "memory-4"));
                case "spring" -> out.addAll(List.of("spring-1", "spring-4"));
                case "camel" -> out.addAll(List.of("camel-memory-4", "camel-jdbc-4"));
                case "postgres" -> out.addAll(List.of("postgres-default-4", "postgres-tuned-" + tunedThreads));
                case "peers" -> out.addAll(List.of("spring-1", "spring-4", "camel-memory-4", "camel-jdbc-4"));
                case "mariadb" -> out.addAll(MARIADB);
                case "redis" -> out.addAll(REDIS);
                case "redis-cluster" -> out.addAll(REDIS_CLUSTER);
                case "batch" -> out.addAll(BATCH);
                case "send" -> out.addAll(SEND);
                case "stores" -> {
                    out.addAll(MARIADB);
                    out.addAll(REDIS);
                    out.addAll(REDIS_CLUSTER);
                }
                default -> {
                    threads(name); // validates
                    out.add(name);
                }
            }
        }
        if (!postgres) {
            out.removeIf(Modes::usesPostgres);
        }
        return List.copyOf(out);
    }

    /**
     * @param mode a mode name
     * @return its handler thread count
     * @throws IllegalArgumentException for an unknown name
     */
    static int threads(String mode) {
        Matcher m = NAME.matcher(mode);
        if (!m.matches()) {
            throw new IllegalArgumentException("unknown mode " + mode + "; known: raw, raw-poolN, memory-N, spring-N,"
                    + " camel-memory-N, camel-jdbc-N, postgres-default-N, postgres-tuned-N, postgres-batchB-N,"
                    + " postgres-tx-N, postgres-tx-send-N, postgres-send-N,"
                    + " memory-fp-off-N, postgres-default-fp-off-N, postgres-tuned-fp-off-N, mariadb-default-N, camel-mariadb-N,"
                    + " redis-default-N, redis-clusterM-N and the groups memory, spring, camel,"
                    + " postgres, peers, mariadb, redis, redis-cluster, stores, batch, send");
        }
        if (mode.equals("raw")) {
            return 1;
        }
        for (int g = 2; g <= m.groupCount(); g++) {
            if (m.group(g) != null) {
                int n = Integer.parseInt(m.group(g));
                if (n < 1) {
                    throw new IllegalArgumentException("mode " + mode + " needs at least 1 thread");
                }
                return n;
            }
        }
        throw new IllegalStateException(mode);
    }

    /** @return whether the row runs AceMQ (and so has a fingerprint setting) */
    static boolean isAceMq(String mode) {
        return mode.startsWith("memory-") || mode.startsWith("postgres-");
    }

    /** @return whether the row runs AceMQ with {@code Fingerprint.off()} */
    static boolean fingerprintOff(String mode) {
        return isAceMq(mode) && mode.contains(FP_OFF);
    }

    /** @return the AceMQ row with the same store and threads and the fingerprint off */
    static String fingerprintOffTwin(String mode) {
        if (!isAceMq(mode)) {
            throw new IllegalArgumentException(mode + " has no fingerprint setting");
        }
        if (fingerprintOff(mode)) {
            return mode;
        }
        int cut = mode.lastIndexOf('-') + 1;
        return mode.substring(0, cut) + FP_OFF + mode.substring(cut);
    }

    /** @return the AceMQ row with the same store and threads and the fingerprint on (the default) */
    static String fingerprintOnTwin(String mode) {
        return mode.replace(FP_OFF, "");
    }

    /**
     * @param modes resolved rows
     * @param fingerprint the settings of {@code --fingerprint} ({@code on}, {@code off} or both), or null when not
     *     given: then the rows stay as requested
     * @return the rows with each AceMQ row in the settings asked for; with both, its fingerprint-off twin follows
     *     it, so that the two are measured one right after the other in every round
     */
    static List<String> withFingerprint(List<String> modes, List<String> fingerprint) {
        if (fingerprint == null) {
            return modes;
        }
        Set<String> out = new LinkedHashSet<>();
        for (String m : modes) {
            if (!isAceMq(m)) {
                out.add(m);
                continue;
            }
            if (fingerprint.contains("on")) {
                out.add(fingerprintOnTwin(m));
            }
            if (fingerprint.contains("off")) {
                out.add(fingerprintOffTwin(m));
            }
        }
        return List.copyOf(out);
    }

    /**
     * @param modes a phase's rows
     * @param round the round, from 1
     * @return the order to measure them in that round: as given, except that in every even round a row and its
     *     fingerprint-off twin right after it swap places, so that neither setting always runs second
     */
    static List<String> roundOrder(List<String> modes, int round) {
        List<String> order = new ArrayList<>(modes);
        if (round % 2 == 0) {
            for (int i = 0; i + 1 < order.size(); i++) {
                String m = order.get(i);
                if (isAceMq(m) && !fingerprintOff(m) && order.get(i + 1).equals(fingerprintOffTwin(m))) {
                    order.set(i, order.get(i + 1));
                    order.set(i + 1, m);
                    i++;
                }
            }
        }
        return order;
    }

    /** @return whether the row keeps its idempotency records in PostgreSQL */
    static boolean usesPostgres(String mode) {
        return mode.startsWith("postgres-") || mode.startsWith("camel-jdbc-");
    }

    /** The server a row keeps its idempotency records in. */
    enum Server {
        POSTGRES("PostgreSQL"), MARIADB("MariaDB"), REDIS("Redis");

        final String label;

        Server(String label) {
            this.label = label;
        }
    }

    /** @return the server the row keeps its records in, or null (in-memory, no de-duplication) */
    static Server server(String mode) {
        if (usesPostgres(mode)) {
            return Server.POSTGRES;
        }
        if (mode.startsWith("mariadb-") || mode.startsWith("camel-mariadb-")) {
            return Server.MARIADB;
        }
        if (mode.startsWith("redis-")) {
            return Server.REDIS;
        }
        return null;
    }

    /** @return the most messages per call of a {@code postgres-batchB-N} row's batch handler, 0 for other rows */
    static int batchSize(String mode) {
        if (!mode.startsWith("postgres-batch")) {
            return 0;
        }
        return Integer.parseInt(mode.substring("postgres-batch".length(), mode.indexOf('-', "postgres-batch".length())));
    }

    /**
     * @return whether the row's handler is a {@code JdbcTransactionalHandler} writing one business row per message
     *     ({@code postgres-tx-N}, {@code postgres-tx-send-N})
     */
    static boolean transactional(String mode) {
        return mode.startsWith("postgres-tx-");
    }

    /** @return the messages the row's handler sends per message it handles: 1 for the sending rows, else 0 */
    static int sends(String mode) {
        return mode.startsWith("postgres-tx-send-") || mode.startsWith("postgres-send-") ? 1 : 0;
    }

    /**
     * @param mode a sending row
     * @return the row with the same store, handler, threads and fingerprint that sends nothing: {@code postgres-tx-N}
     *     for {@code postgres-tx-send-N}, {@code postgres-default-N} for {@code postgres-send-N}
     * @throws IllegalArgumentException for a row that sends nothing
     */
    static String consumeOnlyTwin(String mode) {
        if (mode.startsWith("postgres-tx-send-")) {
            return "postgres-tx-" + mode.substring("postgres-tx-send-".length());
        }
        if (mode.startsWith("postgres-send-")) {
            return "postgres-default-" + mode.substring("postgres-send-".length());
        }
        throw new IllegalArgumentException(mode + " sends nothing");
    }

    /** @return the masters of a {@code redis-clusterM-N} row, 0 for the standalone {@code redis-default-N} */
    static int redisMasters(String mode) {
        if (!mode.startsWith("redis-cluster")) {
            return 0;
        }
        return Integer.parseInt(mode.substring("redis-cluster".length(), mode.lastIndexOf('-')));
    }

    /** @return the raw protonj2 row with the same shape: {@code raw} for one thread, {@code raw-pool4} for more */
    static String baseline(String mode) {
        return threads(mode) == 1 ? "raw" : "raw-pool4";
    }
}
