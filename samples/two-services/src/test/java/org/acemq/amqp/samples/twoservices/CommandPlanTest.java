package org.acemq.amqp.samples.twoservices;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import org.acemq.amqp.samples.twoservices.CommandPlan.Command;
import org.acemq.amqp.samples.twoservices.CommandPlan.Kind;
import org.junit.jupiter.api.Test;

class CommandPlanTest {

    @Test
    void everyOrderOnceAndTheCopiesItWasPlannedWith() {
        CommandPlan plan = CommandPlan.create("r1", 2_000, 0.05, 0.03, 7);

        assertThat(plan.duplicates()).isEqualTo(100);
        assertThat(plan.newIdRetries()).isEqualTo(60);
        assertThat(plan.commands()).hasSize(2_160);
        Map<Kind, Long> kinds = plan.commands().stream().collect(Collectors.groupingBy(Command::kind,
                Collectors.counting()));
        assertThat(kinds).containsEntry(Kind.ORIGINAL, 2_000L).containsEntry(Kind.DUPLICATE, 100L)
                .containsEntry(Kind.NEW_ID_RETRY, 60L);
        assertThat(plan.commands().stream().filter(c -> c.kind() == Kind.ORIGINAL).map(Command::orderId))
                .doesNotHaveDuplicates().hasSize(2_000).allMatch(id -> id.startsWith(plan.orderIdPrefix()));
    }

    @Test
    void aDuplicateRepeatsTheMessageIdARetryKeepsTheOrderUnderANewIdAndBothFollowTheirOriginal() {
        CommandPlan plan = CommandPlan.create("r2", 1_000, 0.1, 0.1, 3);
        List<Command> commands = plan.commands();
        Map<String, Integer> originalAt = new HashMap<>();
        Map<String, Command> originals = new HashMap<>();
        for (int i = 0; i < commands.size(); i++) {
            Command c = commands.get(i);
            if (c.kind() == Kind.ORIGINAL) {
                originalAt.put(c.orderId(), i);
                originals.put(c.orderId(), c);
            }
        }
        for (int i = 0; i < commands.size(); i++) {
            Command copy = commands.get(i);
            if (copy.kind() == Kind.ORIGINAL) {
                continue;
            }
            Command original = originals.get(copy.orderId());
            assertThat(i).as("copy of %s after its original", copy.orderId())
                    .isGreaterThan(originalAt.get(copy.orderId()));
            assertThat(copy.body()).as("a retry resends the same content").isEqualTo(original.body());
            assertThat(copy.properties()).isEqualTo(original.properties());
            if (copy.kind() == Kind.DUPLICATE) {
                assertThat(copy.messageId()).isEqualTo(original.messageId());
            } else {
                assertThat(copy.messageId()).isNotEqualTo(original.messageId());
            }
        }
        assertThat(commands.stream().filter(c -> c.kind() == Kind.NEW_ID_RETRY).map(Command::messageId))
                .doesNotHaveDuplicates();
    }

    @Test
    void theSameSeedGivesTheSamePlanAndRunsDoNotShareIds() {
        assertThat(CommandPlan.create("r3", 500, 0.05, 0.05, 9).commands())
                .isEqualTo(CommandPlan.create("r3", 500, 0.05, 0.05, 9).commands());
        assertThat(CommandPlan.create("r3", 500, 0.05, 0.05, 9).commands())
                .isNotEqualTo(CommandPlan.create("r3", 500, 0.05, 0.05, 10).commands());
        assertThat(CommandPlan.create("aa", 1, 0, 0, 1).commands().get(0).messageId())
                .isNotEqualTo(CommandPlan.create("bb", 1, 0, 0, 1).commands().get(0).messageId());
    }

    @Test
    void badArgumentsAreRefusedWithTheirName() {
        assertThatThrownBy(() -> CommandPlan.create("r", 0, 0, 0, 1)).hasMessageContaining("orders");
        assertThatThrownBy(() -> CommandPlan.create("r", 10, 1.5, 0, 1)).hasMessageContaining("duplicates");
        assertThatThrownBy(() -> CommandPlan.create("r", 10, 0, -0.1, 1)).hasMessageContaining("new-id retries");
    }
}
