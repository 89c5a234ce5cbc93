package org.acemq.amqp.interop;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.acemq.amqp.api.Envelope;
import org.acemq.amqp.api.MessageHandler;
import org.acemq.amqp.testsupport.AmqpTestClient;
import org.acemq.amqp.testsupport.AmqpTestClient.MessageSpec;

/**
 * The scenarios' message handler and its books: it makes the messages of a scenario, decides from each message id how
 * the handler behaves (succeed, fail on the first attempt only, always fail), and counts per id how often the handler
 * ran and how often it succeeded, so that lost, processed-twice and handled-once messages are counted exactly.
 *
 * <p><b>Threading:</b> thread-safe; the consumer calls {@link #handle} from its handler threads.
 */
final class Ledger implements MessageHandler {

    /** How a message's handler behaves; encoded in its id. */
    enum Kind {
        /** Succeeds. */
        NORMAL("n"),
        /** Throws on its first attempt, succeeds on the next. */
        FAIL_ONCE("f"),
        /** Always throws. */
        POISON("p");

        private final String code;

        Kind(String code) {
            this.code = code;
        }
    }

    private static final Duration GATE_LIMIT = Duration.ofSeconds(120);

    private final String runId;
    private final Map<String, Kind> expected = new ConcurrentHashMap<>();
    private final Map<String, AtomicInteger> attempts = new ConcurrentHashMap<>();
    private final Map<String, AtomicInteger> successes = new ConcurrentHashMap<>();
    private final AtomicInteger calls = new AtomicInteger();
    private final AtomicInteger published = new AtomicInteger();
    private volatile Gate gate;

    /** @param runId makes this run's message ids unique on a shared broker */
    Ledger(String runId) {
        this.runId = runId;
    }

    /**
     * Registers and returns new messages: durable, String message ids, bodies that name the id.
     *
     * @param count how many
     * @param kind how their handler behaves
     * @return the messages to publish
     */
    List<MessageSpec> newMessages(int count, Kind kind) {
        List<MessageSpec> specs = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            String id = runId + "-" + kind.code + "-" + (expected.size() + 1);
            expected.put(id, kind);
            specs.add(AmqpTestClient.message(id, "body of " + id));
        }
        return specs;
    }

    /** Copies of already registered messages: same message id, same body (a publisher's retry). */
    static List<MessageSpec> copies(List<MessageSpec> originals) {
        List<MessageSpec> copies = new ArrayList<>(originals.size());
        for (MessageSpec m : originals) {
            copies.add(AmqpTestClient.message(m.messageId(), m.body()));
        }
        return copies;
    }

    /** Counts what is handed to a broker (duplicates included). */
    void countPublished(int n) {
        published.addAndGet(n);
    }

    /**
     * Makes the {@code nth} handler call (1-based, counting every attempt) block until the gate is opened.
     *
     * @return the gate
     */
    Gate blockAt(int nth) {
        Gate g = new Gate(nth);
        gate = g;
        return g;
    }

    @Override
    public void handle(Envelope envelope) throws Exception {
        String id = String.valueOf(envelope.messageId());
        int attempt = attempts.computeIfAbsent(id, k -> new AtomicInteger()).incrementAndGet();
        int call = calls.incrementAndGet();
        Gate g = gate;
        if (g != null && g.nth == call) {
            g.blocked.countDown();
            if (!g.open.await(GATE_LIMIT.toMillis(), TimeUnit.MILLISECONDS)) {
                throw new IllegalStateException("the test did not open the gate within " + GATE_LIMIT);
            }
        }
        Kind kind = expected.getOrDefault(id, Kind.NORMAL);
        if (kind == Kind.POISON || (kind == Kind.FAIL_ONCE && attempt == 1)) {
            throw new IllegalStateException("scripted failure of " + id + " on attempt " + attempt);
        }
        successes.computeIfAbsent(id, k -> new AtomicInteger()).incrementAndGet();
    }

    /** @return whether every message expected to succeed has succeeded at least once */
    boolean allSucceeded() {
        for (Map.Entry<String, Kind> e : expected.entrySet()) {
            if (e.getValue() != Kind.POISON && successes(e.getKey()) == 0) {
                return false;
            }
        }
        return true;
    }

    /** @return how many handler runs succeeded for this id */
    int successes(String id) {
        AtomicInteger n = successes.get(id);
        return n == null ? 0 : n.get();
    }

    /** @return how often the handler ran for this id */
    int attempts(String id) {
        AtomicInteger n = attempts.get(id);
        return n == null ? 0 : n.get();
    }

    /** @return the registered ids of this kind */
    Set<String> ids(Kind kind) {
        Set<String> ids = new TreeSet<>();
        expected.forEach((id, k) -> {
            if (k == kind) {
                ids.add(id);
            }
        });
        return ids;
    }

    /** @return the books as they stand */
    Books books() {
        Set<String> lost = new TreeSet<>();
        Map<String, Integer> twice = new TreeMap<>();
        int once = 0;
        for (Map.Entry<String, Kind> e : expected.entrySet()) {
            int s = successes(e.getKey());
            if (e.getValue() == Kind.POISON) {
                if (s > 0) {
                    twice.put(e.getKey(), s); // a poison message must never succeed
                }
                continue;
            }
            if (s == 0) {
                lost.add(e.getKey());
            } else if (s == 1) {
                once++;
            } else {
                twice.put(e.getKey(), s);
            }
        }
        Set<String> unknown = new TreeSet<>(attempts.keySet());
        unknown.removeAll(expected.keySet());
        return new Books(published.get(), expected.size(), once, lost, twice, unknown, calls.get());
    }

    /**
     * The counts of a run.
     *
     * @param published messages handed to the broker, duplicates included
     * @param distinct distinct message ids registered
     * @param handledOnce ids (not poison) whose handler succeeded exactly once
     * @param lost ids (not poison) whose handler never succeeded
     * @param processedTwice ids whose handler succeeded more than once (or a poison id that succeeded), with counts
     * @param unknown ids the handler saw that this run did not publish
     * @param handlerCalls handler runs in total
     */
    record Books(int published, int distinct, int handledOnce, Set<String> lost, Map<String, Integer> processedTwice,
                 Set<String> unknown, int handlerCalls) {

        @Override
        public String toString() {
            return "published " + published + " (" + distinct + " distinct ids), handled once " + handledOnce
                    + ", lost " + lost.size() + sample(lost) + ", processed twice " + processedTwice.size()
                    + (processedTwice.isEmpty() ? "" : " " + processedTwice) + ", unknown ids " + unknown.size()
                    + ", handler calls " + handlerCalls;
        }

        private static String sample(Set<String> ids) {
            if (ids.isEmpty()) {
                return "";
            }
            List<String> first = new ArrayList<>(ids).subList(0, Math.min(5, ids.size()));
            return " " + first + (ids.size() > first.size() ? "…" : "");
        }
    }

    /** Holds one handler call until the test opens it. */
    static final class Gate {
        private final int nth;
        private final CountDownLatch blocked = new CountDownLatch(1);
        private final CountDownLatch open = new CountDownLatch(1);

        private Gate(int nth) {
            this.nth = nth;
        }

        /** @return whether the handler reached the gate within {@code limit} */
        boolean awaitBlocked(Duration limit) throws InterruptedException {
            return blocked.await(limit.toMillis(), TimeUnit.MILLISECONDS);
        }

        /** Lets the blocked call (and every later one) through. */
        void open() {
            open.countDown();
        }
    }
}
