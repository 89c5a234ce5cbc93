package org.acemq.amqp.reliability;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

import javax.sql.DataSource;

import org.acemq.amqp.testsupport.AmqpTestClient;

/**
 * Reads the effects table, the confirms and rejections the consumers recorded, and the dead-letter queue, and
 * decides.
 *
 * <h2>The rules</h2>
 * <ul>
 *   <li><b>lost</b>: a unique non-poison message with no effect. Must be 0.</li>
 *   <li><b>transactional mode</b>: every non-poison message has exactly one effect; any second effect counts as a
 *       duplicated effect and fails the run.</li>
 *   <li><b>separate mode</b> (the effect commits on its own, before the store's confirm): a message may have more
 *       than one effect, but only because an attempt was interrupted between its effect and its confirm. Each effect
 *       is tagged with the store's attempt number; {@code harness_confirms} says, per attempt, whether
 *       {@code confirm(Claim)} was called and whether the claim still held its lease ("held"). An effect is
 *       <em>confirmed</em> if its attempt's confirm held the lease. Violations (each fails the run):
 *       <ol>
 *         <li>two effects with the same attempt (two handlers ran under one claim);</li>
 *         <li>two confirmed effects of one message;</li>
 *         <li>an effect from an attempt later than the confirmed one (a handler ran after the message had been
 *             confirmed: the store should have answered ALREADY_CONFIRMED).</li>
 *       </ol>
 *       Every other extra effect is reported by its cause: <em>crash before confirm</em> (no confirm recorded and
 *       the process that wrote it died), <em>lease lost before confirm</em> (its confirm returned false: the
 *       process was paused or slowed past its lease and another took over), or <em>confirm not recorded</em>
 *       (its process lived but no confirm was recorded: the store was unreachable for every confirm retry).</li>
 *   <li><b>poison</b>: every poison message is in {@code DLQ.orders}, with the reason the runtime rejected it for
 *       (PERMANENT for {@code poison-permanent}, POISON = acemq:max-attempts-exceeded for {@code poison-transient}),
 *       and has no effect. No non-poison message is dead-lettered.</li>
 *   <li><b>unsettled</b>: at the end the queue is empty and nothing is being delivered, before and after the
 *       consumers stop.</li>
 * </ul>
 */
final class Checker {

    private Checker() {
    }

    record Effect(String key, String consumer, int attempt) {
    }

    record Confirm(String consumer, boolean held) {
    }

    static Result check(ReliabilityHarness.Config config, ReliabilityHarness.Workload workload, DataSource db,
            List<AmqpTestClient.ReceivedMessage> dead, boolean deadLettersAtMostOnce, long queuedBeforeStop, long deliveringBeforeStop,
            long queuedAfterStop, Map<FaultKind, Integer> faults, Set<String> deadIncarnations, int published,
            int publishRetries, Duration duration, boolean complete) throws SQLException {
        Map<String, List<Effect>> effects = new HashMap<>();
        Map<String, Map<Integer, Confirm>> confirms = new HashMap<>();
        Map<String, Set<String>> rejections = new HashMap<>();
        int effectRows = 0;
        try (Connection c = db.getConnection(); Statement s = c.createStatement()) {
            try (ResultSet rs = s.executeQuery("SELECT msg_key, consumer, attempt FROM " + HarnessDb.SCHEMA
                    + ".harness_effects")) {
                while (rs.next()) {
                    Effect e = new Effect(rs.getString(1), rs.getString(2), rs.getInt(3));
                    effects.computeIfAbsent(e.key(), k -> new ArrayList<>()).add(e);
                    effectRows++;
                }
            }
            try (ResultSet rs = s.executeQuery("SELECT msg_key, attempt, consumer, held FROM " + HarnessDb.SCHEMA
                    + ".harness_confirms")) {
                while (rs.next()) {
                    confirms.computeIfAbsent(rs.getString(1), k -> new HashMap<>())
                            .put(rs.getInt(2), new Confirm(rs.getString(3), rs.getBoolean(4)));
                }
            }
            try (ResultSet rs = s.executeQuery("SELECT msg_key, reason FROM " + HarnessDb.SCHEMA
                    + ".harness_rejections")) {
                while (rs.next()) {
                    rejections.computeIfAbsent(rs.getString(1), k -> new HashSet<>()).add(rs.getString(2));
                }
            }
        }

        boolean transactional = config.mode().equals("transactional");
        List<String> lost = new ArrayList<>();
        int keysWithDuplicates = 0;
        int extraEffects = 0;
        Map<String, Integer> extraByCause = new TreeMap<>();
        List<String> sameAttempt = new ArrayList<>();
        List<String> duplicateConfirmed = new ArrayList<>();
        List<String> effectAfterConfirm = new ArrayList<>();
        for (String id : workload.nonPoisonIds()) {
            String key = ReliabilityHarness.key(id);
            List<Effect> list = effects.getOrDefault(key, List.of());
            if (list.isEmpty()) {
                lost.add(id);
                continue;
            }
            if (list.size() == 1) {
                continue;
            }
            keysWithDuplicates++;
            extraEffects += list.size() - 1;
            Map<Integer, Confirm> conf = confirms.getOrDefault(key, Map.of());
            Set<Integer> attempts = new HashSet<>();
            int confirmedAttempt = -1;
            int confirmedEffects = 0;
            for (Effect e : list) {
                if (!attempts.add(e.attempt())) {
                    sameAttempt.add(key + "@" + e.attempt());
                }
                Confirm cf = conf.get(e.attempt());
                if (cf != null && cf.held()) {
                    confirmedEffects++;
                    confirmedAttempt = e.attempt();
                }
            }
            if (confirmedEffects > 1) {
                duplicateConfirmed.add(key);
            }
            // the message's own effect: the confirmed one, or else the latest attempt's; every other one is extra
            Effect primary = null;
            for (Effect e : list) {
                Confirm cf = conf.get(e.attempt());
                if (cf != null && cf.held()) {
                    primary = e;
                    break;
                }
                if (primary == null || e.attempt() > primary.attempt()) {
                    primary = e;
                }
            }
            for (Effect e : list) {
                if (e == primary) {
                    continue;
                }
                if (confirmedAttempt > 0 && e.attempt() > confirmedAttempt) {
                    effectAfterConfirm.add(key + "@" + e.attempt());
                }
                Confirm cf = conf.get(e.attempt());
                String cause;
                if (cf == null) {
                    cause = deadIncarnations.contains(e.consumer()) ? "crash before confirm" : "confirm not recorded";
                } else {
                    cause = "lease lost before confirm";
                }
                extraByCause.merge(cause, 1, Integer::sum);
            }
        }

        // poison and the dead-letter queue
        Set<String> poison = workload.poisonIds();
        Map<String, Integer> dlqIds = new HashMap<>();
        Map<String, Object> sampleAnnotations = dead.isEmpty() ? Map.of() : dead.get(0).annotations();
        for (AmqpTestClient.ReceivedMessage m : dead) {
            dlqIds.merge(String.valueOf(m.messageId()), 1, Integer::sum);
        }
        List<String> poisonMissingFromDlq = new ArrayList<>();
        int droppedByBroker = 0;
        List<String> poisonWithoutReason = new ArrayList<>();
        List<String> poisonWithEffects = new ArrayList<>();
        for (String id : poison) {
            String expectedReason = workload.kinds.get(id).equals("poison-permanent") ? "PERMANENT" : "POISON";
            boolean rejected = rejections.getOrDefault(ReliabilityHarness.key(id), Set.of()).contains(expectedReason);
            if (!dlqIds.containsKey(id)) {
                // Not in the dead-letter queue. With the queue empty at the end, a message a consumer rejected was
                // taken back by the broker; a broker that dead-letters at most once (RabbitMQ 3) may then drop it.
                // That is counted and reported, not a consumer's loss; anywhere else it is a violation.
                if (deadLettersAtMostOnce && rejected) {
                    droppedByBroker++;
                } else {
                    poisonMissingFromDlq.add(id);
                }
            }
            if (!rejected) {
                poisonWithoutReason.add(id + " (" + rejections.get(ReliabilityHarness.key(id)) + ")");
            }
            if (effects.containsKey(ReliabilityHarness.key(id))) {
                poisonWithEffects.add(id);
            }
        }
        List<String> nonPoisonDeadLettered = new ArrayList<>();
        for (String id : dlqIds.keySet()) {
            if (!poison.contains(id)) {
                nonPoisonDeadLettered.add(id);
            }
        }

        List<String> violations = new ArrayList<>();
        if (!complete) {
            violations.add("workload did not complete within " + config.timeout());
        }
        if (!lost.isEmpty()) {
            violations.add(lost.size() + " lost " + head(lost));
        }
        if (transactional && keysWithDuplicates > 0) {
            violations.add(keysWithDuplicates + " messages with more than one effect (transactional mode)");
        }
        if (!sameAttempt.isEmpty()) {
            violations.add("two effects under one claim: " + head(sameAttempt));
        }
        if (!duplicateConfirmed.isEmpty()) {
            violations.add("two confirmed effects: " + head(duplicateConfirmed));
        }
        if (!effectAfterConfirm.isEmpty()) {
            violations.add("effect after the message was confirmed: " + head(effectAfterConfirm));
        }
        if (!poisonMissingFromDlq.isEmpty()) {
            violations.add("poison not dead-lettered: " + head(poisonMissingFromDlq));
        }
        if (!poisonWithoutReason.isEmpty()) {
            violations.add("poison without the expected rejection reason: " + head(poisonWithoutReason));
        }
        if (!poisonWithEffects.isEmpty()) {
            violations.add("poison with an effect: " + head(poisonWithEffects));
        }
        if (!nonPoisonDeadLettered.isEmpty()) {
            violations.add("non-poison dead-lettered: " + head(nonPoisonDeadLettered));
        }
        if (queuedBeforeStop != 0 || deliveringBeforeStop != 0 || queuedAfterStop != 0) {
            violations.add("unsettled: queue " + queuedBeforeStop + ", delivering " + deliveringBeforeStop
                    + ", queue after the consumers stopped " + queuedAfterStop);
        }
        for (FaultKind k : config.faults()) {
            if (faults.getOrDefault(k, 0) == 0) {
                violations.add("fault " + k.label() + " was never injected");
            }
        }
        extraByCause.values().removeIf(v -> v == 0);
        return new Result(config, workload.ids.size(), published, publishRetries, workload.duplicated.size(),
                faults, lost.size(), effectRows, keysWithDuplicates, extraEffects, extraByCause,
                duplicateConfirmed.size() + effectAfterConfirm.size() + sameAttempt.size(), dead.size(),
                poison.size(), poison.size() - poisonMissingFromDlq.size() - droppedByBroker, droppedByBroker,
                poison.size() - poisonWithoutReason.size(),
                queuedBeforeStop + deliveringBeforeStop + queuedAfterStop, duration, sampleAnnotations, violations);
    }

    private static String head(List<String> list) {
        List<String> sorted = new ArrayList<>(list);
        java.util.Collections.sort(sorted);
        return sorted.size() <= 10 ? sorted.toString() : sorted.subList(0, 10) + "...";
    }
}
