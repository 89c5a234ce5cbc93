package org.acemq.amqp.reliability;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.time.Duration;
import java.util.EnumSet;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The short (CI) version of the reliability harness, once per handler mode: 1,500 unique messages with duplicates,
 * transient failures and poison messages, three consumer JVMs on one queue and one PostgreSQL store, and every fault
 * kind injected at least once (see {@link FaultKind}). The large version is {@link ReliabilityHarness#main}; see
 * docs/reliability.md.
 */
class ReliabilityHarnessIT {

    private static final int MESSAGES = 1_500;

    @TempDir
    Path workDir;

    @Test
    void separateModeSurvivesEveryFaultKind() throws Exception {
        Result result = run("separate");

        assertCommon(result);
        assertThat(result.duplicateConfirmed()).as("duplicate confirmed effects").isZero();
        // in separate mode a second effect is allowed only for an attempt interrupted before its confirm
        assertThat(result.extraByCause().keySet())
                .isSubsetOf("crash before confirm", "lease lost before confirm", "confirm not recorded");
    }

    @Test
    void transactionalModeHasExactlyOneEffectPerMessage() throws Exception {
        Result result = run("transactional");

        assertCommon(result);
        assertThat(result.keysWithDuplicates()).as("messages with more than one effect").isZero();
        assertThat(result.extraEffects()).as("extra effects").isZero();
        assertThat(result.duplicateConfirmed()).as("duplicate confirmed effects").isZero();
        // exactly one effect per unique non-poison message (and none for poison: lost is 0, so every effect row
        // belongs to a distinct non-poison message)
        assertThat(result.effectRows()).as("effect rows").isEqualTo(result.messages() - result.poison());
    }

    /** @return the store's database: {@code postgresql} here, {@code mariadb} in {@link ReliabilityHarnessMariaDbIT} */
    String database() {
        return "postgresql";
    }

    private Result run(String mode) throws Exception {
        Result result = new ReliabilityHarness(ReliabilityHarness.Config.defaults(MESSAGES)
                .withMode(mode)
                .withDatabase(database())
                .withConsumers(3)
                .withFaults(EnumSet.allOf(FaultKind.class), 1)
                .withTimeout(Duration.ofMinutes(3))
                .withWorkDir(workDir)).run();
        System.out.println(result.table());
        return result;
    }

    private static void assertCommon(Result result) {
        assertThat(result.lost()).as("lost").isZero();
        assertThat(result.poison()).as("poison messages").isPositive();
        assertThat(result.poisonInDlq()).as("poison in the DLQ").isEqualTo(result.poison());
        assertThat(result.poisonWithReason()).as("poison with its rejection reason").isEqualTo(result.poison());
        assertThat(result.deadLettered()).as("dead-lettered (a publisher retry may send a poison twice)")
                .isGreaterThanOrEqualTo(result.poison());
        assertThat(result.unsettled()).as("unsettled").isZero();
        for (FaultKind kind : FaultKind.values()) {
            assertThat(result.faults().get(kind)).as("injected " + kind.label()).isPositive();
        }
        assertThat(result.violations()).isEmpty();
    }
}
