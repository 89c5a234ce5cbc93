package org.acemq.amqp.api;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.HashSet;
import java.util.Set;
import org.acemq.amqp.api.IdempotencyStore.ClaimResult;
import org.junit.jupiter.api.Test;

class IdempotencyStoreDefaultsTest {

    /** The simplest two-state store: a set of claims and a set of confirmations, no leases. */
    private static final class TwoStateStore implements IdempotencyStore {
        final Set<String> claimed = new HashSet<>();
        final Set<String> confirmed = new HashSet<>();

        @Override public synchronized boolean claim(String id) {
            return !confirmed.contains(id) && claimed.add(id);
        }
        @Override public synchronized void confirm(String id) {
            claimed.remove(id);
            confirmed.add(id);
        }
        @Override public synchronized void release(String id) {
            claimed.remove(id);
        }
        @Override public synchronized boolean isConfirmed(String id) {
            return confirmed.contains(id);
        }
    }

    @Test
    void defaultTryClaimDistinguishesAllThreeResults() {
        TwoStateStore store = new TwoStateStore();
        assertThat(store.tryClaim("a")).isEqualTo(ClaimResult.CLAIMED);
        assertThat(store.tryClaim("a")).isEqualTo(ClaimResult.IN_PROGRESS);
        store.confirm("a");
        assertThat(store.tryClaim("a")).isEqualTo(ClaimResult.ALREADY_CONFIRMED);
        store.release("a");
        assertThat(store.tryClaim("a")).isEqualTo(ClaimResult.ALREADY_CONFIRMED);
    }

    @Test
    void releasedIdCanBeClaimedAgain() {
        TwoStateStore store = new TwoStateStore();
        assertThat(store.tryClaim("b")).isEqualTo(ClaimResult.CLAIMED);
        store.release("b");
        assertThat(store.tryClaim("b")).isEqualTo(ClaimResult.CLAIMED);
    }

    @Test
    void messageIdRulesNameTheProblem() {
        assertThatThrownBy(() -> MessageIds.requireValid(null))
                .isInstanceOf(NullPointerException.class).hasMessageContaining("messageId");
        assertThatThrownBy(() -> MessageIds.requireValid(" "))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("blank");
        assertThatThrownBy(() -> MessageIds.requireValid("x".repeat(MessageIds.MAX_LENGTH + 1)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("at most 512").hasMessageContaining("513");
        assertThat(MessageIds.requireValid("x".repeat(MessageIds.MAX_LENGTH))).hasSize(512);
    }

    @Test
    void claimRecordValidatesAttempt() {
        assertThat(new Claim("a", ClaimResult.CLAIMED, 1).claimed()).isTrue();
        assertThat(new Claim("a", ClaimResult.IN_PROGRESS, 0).claimed()).isFalse();
        assertThatThrownBy(() -> new Claim("a", ClaimResult.CLAIMED, 0))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining(">= 1");
        assertThatThrownBy(() -> new Claim("a", ClaimResult.ALREADY_CONFIRMED, -1))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining(">= 0");
    }

    @Test
    void permanentFailureCarriesCondition() {
        PermanentMessageException e = new PermanentMessageException("no such customer");
        assertThat(e.condition()).isEqualTo(PermanentMessageException.DEFAULT_CONDITION);
        assertThat(e).isInstanceOf(AcemqException.class).hasMessage("no such customer");
        assertThatThrownBy(() -> new PermanentMessageException(" ", "x", null))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("condition");
    }
}
