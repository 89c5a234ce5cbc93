package org.acemq.amqp.store.jdbc.internal;

import org.acemq.amqp.api.IdempotencyStore.ClaimResult;

/** The claim result codes of {@link StoreDialect}. */
final class Claims {

    private Claims() {
    }

    static ClaimResult result(int code) {
        return switch (code) {
            case StoreDialect.CLAIMED -> ClaimResult.CLAIMED;
            case StoreDialect.ALREADY_CONFIRMED -> ClaimResult.ALREADY_CONFIRMED;
            case StoreDialect.IN_PROGRESS -> ClaimResult.IN_PROGRESS;
            default -> throw new IllegalStateException("Unexpected claim code " + code);
        };
    }
}
