package org.acemq.amqp.reliability;

import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.StringJoiner;

/**
 * What the checker found (see {@link Checker} for the rules).
 *
 * @param extraEffects effects beyond the first per message (separate mode)
 * @param extraByCause those extra effects by cause
 * @param duplicateConfirmed violations: two confirmed effects, an effect after the confirm, or two under one claim
 * @param deadLettersDroppedByBroker poison a consumer rejected (the queue is empty: the broker took the rejection) that
 *     is not in the dead-letter queue, on a broker that dead-letters at most once (RabbitMQ 3); 0 elsewhere
 * @param unsettled messages in the queue or being delivered at the end (before + after the consumers stopped)
 */
public record Result(ReliabilityHarness.Config config, int messages, int published, int publishRetries,
        int republished, Map<FaultKind, Integer> faults, int lost, int effectRows, int keysWithDuplicates,
        int extraEffects, Map<String, Integer> extraByCause, int duplicateConfirmed, int deadLettered, int poison,
        int poisonInDlq, int deadLettersDroppedByBroker, int poisonWithReason, long unsettled, Duration duration, Map<String, Object> dlqAnnotations,
        List<String> violations) {

    public boolean passed() {
        return violations.isEmpty();
    }

    /** The result as a Markdown table (the format of the runs in docs/reports/reliability-runs.md). */
    public String table() {
        StringJoiner faultList = new StringJoiner(", ");
        int total = 0;
        for (Map.Entry<FaultKind, Integer> e : faults.entrySet()) {
            if (e.getValue() > 0) {
                faultList.add(e.getKey().label() + " " + e.getValue());
                total += e.getValue();
            }
        }
        StringBuilder sb = new StringBuilder();
        sb.append("| | |\n|---|---|\n");
        row(sb, "mode", config.mode());
        row(sb, "consumer JVMs", String.valueOf(config.consumers()));
        row(sb, "unique messages", String.valueOf(messages));
        row(sb, "messages sent (incl. " + republished + " re-published duplicates and " + publishRetries
                + " retried batches)", String.valueOf(published));
        row(sb, "poison messages", String.valueOf(poison));
        row(sb, "faults injected (" + total + ")", faultList.toString());
        row(sb, "lost", String.valueOf(lost));
        row(sb, "effects written", String.valueOf(effectRows));
        row(sb, "messages with more than one effect", keysWithDuplicates + (extraEffects > 0
                ? " (" + extraEffects + " extra effects: " + extraByCause + ")" : ""));
        row(sb, "duplicate confirmed effects", String.valueOf(duplicateConfirmed));
        row(sb, "dead-lettered", deadLettered + " (poison in DLQ " + poisonInDlq + "/" + poison
                + ", with the expected reason " + poisonWithReason + "/" + poison + ")");
        if (deadLettersDroppedByBroker > 0) {
            row(sb, "poison rejected by a consumer and dropped by the broker's at-most-once dead-lettering",
                    String.valueOf(deadLettersDroppedByBroker));
        }
        row(sb, "unsettled at the end", String.valueOf(unsettled));
        row(sb, "duration", String.format(Locale.ROOT, "%.1f s", duration.toMillis() / 1000.0));
        row(sb, "verdict", violations.isEmpty() ? "PASS" : "FAIL " + violations);
        return sb.toString();
    }

    private static void row(StringBuilder sb, String name, String value) {
        sb.append("| ").append(name).append(" | ").append(value).append(" |\n");
    }
}
