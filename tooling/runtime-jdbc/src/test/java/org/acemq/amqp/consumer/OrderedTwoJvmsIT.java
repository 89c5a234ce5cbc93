package org.acemq.amqp.consumer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.acemq.amqp.store.jdbc.JdbcIdempotencyStore;
import org.acemq.amqp.testsupport.AmqpTestClient;
import org.acemq.amqp.testsupport.AmqpTestClient.MessageSpec;
import org.h2.jdbcx.JdbcConnectionPool;
import org.h2.tools.Server;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Two consumer processes ({@link OrderedConsumerMain}, each a JVM of its own with its own connection) on one Artemis
 * queue, ordered by {@code group-id}, sharing one JDBC store: Artemis's message groups give all of a group's messages
 * to one consumer while it is connected, so the order per key holds across the processes. Half-way through, one
 * process closes (its groups move to the other, which receives the released messages before the groups' later ones):
 * the order still holds over the hand-over. Each effect carries its run's start and end on the system's monotonic clock,
 * so the check is on one time line for both processes: per key, the effects sorted by start are the publish order,
 * none starts before the previous one ended, and each happened once.
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class OrderedTwoJvmsIT extends ArtemisTestBase {

    private static final String QUEUE = "ordered-two-jvms";
    private static final int KEYS = 100;
    private static final int PER_KEY = 20;

    private Server server;
    private final List<Child> children = new ArrayList<>();

    /** One consumer process and the lines it printed. */
    private static final class Child {
        final String name;
        final Process process;
        final List<String> lines = new CopyOnWriteArrayList<>();
        final Writer stdin;

        Child(String name, Process process) {
            this.name = name;
            this.process = process;
            this.stdin = new OutputStreamWriter(process.getOutputStream(), StandardCharsets.UTF_8);
            Thread reader = new Thread(() -> {
                try (BufferedReader out = new BufferedReader(new InputStreamReader(process.getInputStream(),
                        StandardCharsets.UTF_8))) {
                    String line;
                    while ((line = out.readLine()) != null) {
                        lines.add(line);
                    }
                } catch (IOException e) {
                    lines.add("READ FAILED " + e);
                }
            }, "child-" + name + "-stdout");
            reader.setDaemon(true);
            reader.start();
        }

        boolean printed(String line) {
            return lines.contains(line);
        }

        void stop() throws IOException {
            stdin.write("STOP\n");
            stdin.flush();
        }
    }

    /** One effect: key, sequence number, and when its run started and ended (System.nanoTime of the process). */
    record Effect(String process, String key, int seq, long start, long end) {
    }

    @BeforeEach
    void startH2Server() throws SQLException {
        server = Server.createTcpServer("-tcpPort", "0", "-ifNotExists").start();
    }

    @AfterEach
    void stop() {
        children.forEach(c -> c.process.destroyForcibly());
        if (server != null) {
            server.stop();
        }
    }

    @Test
    void twoConsumerProcessesOnOneQueueKeepEachGroupsOrderAlsoWhenOneOfThemLeaves() throws Exception {
        String url = "jdbc:h2:tcp://127.0.0.1:" + server.getPort() + "/mem:OrderedTwoJvmsIT_" + System.nanoTime()
                + ";DB_CLOSE_DELAY=-1;LOCK_TIMEOUT=10000";
        JdbcConnectionPool pool = JdbcConnectionPool.create(url, "sa", "");
        try {
            JdbcIdempotencyStore.builder(pool).build().createSchema();
            Child a = start("a", url);
            Child b = start("b", url);
            await().atMost(Duration.ofSeconds(60)).until(() -> a.printed("READY") && b.printed("READY")
                    && broker.consumerCount(QUEUE) == 2);
            // both links' credit must have reached the broker, or it gives every group to the one that has some
            await().atMost(Duration.ofSeconds(30)).until(() -> broker.consumersWithCredit(QUEUE) == 2);

            List<MessageSpec> published = new ArrayList<>();
            for (int s = 0; s < PER_KEY; s++) {
                for (int k = 0; k < KEYS; k++) {
                    published.add(AmqpTestClient.message("g" + k + "-" + s, "update " + s).groupId("g" + k));
                }
            }
            int half = published.size() / 2;
            client.send(QUEUE, published.subList(0, half));
            await().atMost(Duration.ofSeconds(60)).until(() -> broker.messageCount(QUEUE) < half / 2);
            // a leaves with messages of its groups still in flight and on the queue: they move to b
            a.stop();
            await().atMost(Duration.ofSeconds(60)).until(() -> a.printed("DONE"));
            client.send(QUEUE, published.subList(half, published.size()));
            await().atMost(Duration.ofSeconds(90)).until(() -> broker.messageCount(QUEUE) == 0);
            b.stop();
            await().atMost(Duration.ofSeconds(60)).until(() -> b.printed("DONE"));

            List<Effect> effects = new ArrayList<>();
            effects.addAll(effects(a));
            effects.addAll(effects(b));
            assertThat(effects).as("effects of both processes").hasSize(KEYS * PER_KEY);

            Map<String, List<Effect>> byKey = new HashMap<>();
            for (Effect e : effects) {
                byKey.computeIfAbsent(e.key(), k -> new ArrayList<>()).add(e);
            }
            assertThat(byKey).hasSize(KEYS);
            List<Integer> publishOrder = new ArrayList<>();
            for (int s = 0; s < PER_KEY; s++) {
                publishOrder.add(s);
            }
            Set<String> movedKeys = new HashSet<>();
            for (Map.Entry<String, List<Effect>> e : byKey.entrySet()) {
                List<Effect> runs = e.getValue();
                runs.sort(Comparator.comparingLong(Effect::start));
                assertThat(runs).as("effects of %s in the order they started", e.getKey()).extracting(Effect::seq)
                        .isEqualTo(publishOrder);
                for (int i = 1; i < runs.size(); i++) {
                    assertThat(runs.get(i).start()).as("%s: a run starts after the previous one ended (%s, %s)",
                            e.getKey(), runs.get(i - 1), runs.get(i)).isGreaterThanOrEqualTo(runs.get(i - 1).end());
                }
                if (runs.stream().map(Effect::process).distinct().count() > 1) {
                    movedKeys.add(e.getKey());
                }
            }
            long inA = effects.stream().filter(x -> x.process().equals("a")).count();
            assertThat(inA).as("effects in the process that left (both took part)").isPositive()
                    .isLessThan(KEYS * PER_KEY);
            assertThat(movedKeys).as("groups that moved from a to b when a left").isNotEmpty();
        } finally {
            pool.dispose();
        }
    }

    private Child start(String name, String url) throws IOException {
        String classpath = String.join(File.pathSeparator, System.getProperty("java.class.path"),
                System.getProperty("jdk.module.path", ""));
        List<String> command = List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-cp", classpath, OrderedConsumerMain.class.getName(), broker.host(),
                Integer.toString(broker.port()), url, QUEUE, "ordered-" + name);
        Path errors = Path.of("target", "OrderedTwoJvmsIT-" + name + ".log").toAbsolutePath();
        Child child = new Child(name, new ProcessBuilder(command).redirectError(errors.toFile()).start());
        children.add(child);
        return child;
    }

    private static List<Effect> effects(Child child) {
        List<Effect> out = new ArrayList<>();
        for (String line : child.lines) {
            if (line.startsWith("E ")) {
                String[] f = line.split(" ");
                out.add(new Effect(child.name, f[1], Integer.parseInt(f[2]), Long.parseLong(f[3]),
                        Long.parseLong(f[4])));
            }
        }
        return out;
    }
}
