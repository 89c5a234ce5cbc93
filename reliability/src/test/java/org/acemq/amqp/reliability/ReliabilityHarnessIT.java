package org.acemq.amqp.reliability;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.time.Duration;
import java.util.EnumSet;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The short (CI) version of the reliability harness: ~2,000 unique messages with duplicates, transient failures and
 * poison messages, three consumer JVMs on one queue and one PostgreSQL store, and every fault kind injected at least
 * once (see {@link FaultKind}). The large version is {@link ReliabilityHarness#main}; see docs/reliability.md.
 */
class ReliabilityHarnessIT {

    @TempDir
    Path workDir;

    @Test
    void separateModeSurvivesEveryFaultKind() throws Exception {
        Result result = new ReliabilityHarness(ReliabilityHarness.Config.defaults(2_000)
                .withConsumers(3)
                .withFaults(EnumSet.allOf(FaultKind.class), 1)
                .withTimeout(Duration.ofMinutes(3))
                .withWorkDir(workDir)).run();
        System.out.println(result.table());

        assertThat(result.lost()).as("lost").isZero();
        assertThat(result.duplicateConfirmed()).as("duplicate confirmed effects").isZero();
        assertThat(result.poisonInDlq()).as("poison in the DLQ").isEqualTo(result.poison());
        assertThat(result.poisonWithReason()).as("poison with its rejection reason").isEqualTo(result.poison());
        assertThat(result.unsettled()).as("unsettled").isZero();
        for (FaultKind kind : FaultKind.values()) {
            assertThat(result.faults().get(kind)).as("injected " + kind.label()).isPositive();
        }
        // in separate mode a second effect is allowed only for an attempt interrupted before its confirm
        assertThat(result.extraByCause().keySet())
                .isSubsetOf("crash before confirm", "lease lost before confirm", "confirm not recorded");
        assertThat(result.violations()).isEmpty();
    }

    @Test
    void transactionalModeHasExactlyOneEffectPerMessage() throws Exception {
        Assumptions.assumeTrue(TransactionalMode.available(), TransactionalMode.HANDLER_CLASS
                + " (branch txmode) is not on this branch yet");
        Result result = new ReliabilityHarness(ReliabilityHarness.Config.defaults(2_000)
                .withMode("transactional")
                .withFaults(EnumSet.allOf(FaultKind.class), 1)
                .withTimeout(Duration.ofMinutes(3))
                .withWorkDir(workDir)).run();
        System.out.println(result.table());
        assertThat(result.lost()).as("lost").isZero();
        assertThat(result.keysWithDuplicates()).as("messages with more than one effect").isZero();
        assertThat(result.violations()).isEmpty();
    }
}
