package org.acemq.amqp.consumer.internal;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;

/**
 * The arithmetic of link credit in a {@link CreditAllocator}: fair shares of a shared budget and the grants that are
 * due. A shared budget ({@code maxInFlightPerConnection > 0}) is water-filled over the accounts (each share capped by
 * the account's window, what one cannot use goes to the others), so every account gets {@code budget / accounts} or
 * its whole window; an account never holds more than its share, so none can hold budget idle while another waits for
 * its own. Grants are batched: an account is granted its free slots once they reach a quarter of what it may hold, or
 * at once when it has no unused credit left; so a busy link gets one flow per few deliveries, not one per delivery.
 *
 * <p>Not thread-safe: the allocator calls it under the lock that guards the accounts (its own when the budget is
 * shared, the account's own otherwise).
 */
final class CreditShares {

    private final int budget;
    private int cursor;

    /** @param budget deliveries all accounts may hold together, 0 for no cap */
    CreditShares(int budget) {
        this.budget = budget;
    }

    /**
     * Grants {@code m} its free slots if they are due.
     *
     * @param m the account
     * @param free what the budget has left (or {@link Integer#MAX_VALUE} without a budget)
     * @param frozen whether the allocator grants nothing at all (paused or stopped)
     * @return credits granted to {@code m}
     */
    static int grantIfDue(CreditAccount m, int free, boolean frozen) {
        if (frozen || m.paused || !m.attached || m.draining || m.closed) {
            return 0;
        }
        int cap = m.cap();
        int room = Math.min(cap - m.outstanding, free);
        if (room <= 0) {
            return 0;
        }
        // Collect small grants into bigger ones, unless the link has no credit left to work with.
        if (room < Math.max(1, cap / 4) && m.holdsUnused()) {
            return 0;
        }
        m.outstanding += room;
        m.grantOnLink(room);
        return room;
    }

    /**
     * Shares the budget out: grants each account what is due, starting one further along each time (so no account is
     * always served last); then, if an account waits for slots while the budget is used up, takes lent credit back
     * from those holding more than their share.
     *
     * @param accounts every account
     * @param frozen whether the allocator grants nothing at all (paused or stopped)
     * @param reclaim whether lent credit may be taken back (the broker answers drains per spec, and not paused)
     */
    void rebalance(List<? extends CreditAccount> accounts, boolean frozen, boolean reclaim) {
        int free = budget;
        for (CreditAccount m : accounts) {
            free -= m.outstanding;
        }
        int n = accounts.size();
        int start = cursor++ % n;
        boolean waiting = false;
        for (int i = 0; i < n; i++) {
            CreditAccount m = accounts.get((start + i) % n);
            free -= grantIfDue(m, Math.max(0, free), frozen);
            waiting |= m.attached && !m.paused && !m.draining && m.outstanding < m.cap();
        }
        if (waiting && free <= 0 && reclaim) {
            for (CreditAccount m : accounts) {
                if (m.attached && !m.draining && m.outstanding > m.target && m.holdsUnused()) {
                    m.startDrain(); // lent credit goes back to its owner
                }
            }
        }
    }

    /**
     * Water-fills the budget over the accounts that count: open ones that are attached or starting, and, unless the
     * share of an account whose link is down is lent to the others, detached ones too.
     *
     * @param accounts every account
     * @param lending whether an account whose link is down lends its share
     */
    void targets(List<? extends CreditAccount> accounts, boolean lending) {
        List<CreditAccount> counted = new ArrayList<>();
        for (CreditAccount m : accounts) {
            m.target = 0;
            if (!m.closed && (m.attached || m.starting || !lending)) {
                counted.add(m);
            }
        }
        counted.sort(Comparator.comparingInt(m -> m.window));
        int remaining = budget;
        for (int i = 0; i < counted.size(); i++) {
            CreditAccount m = counted.get(i);
            m.target = Math.min(m.window, remaining / (counted.size() - i));
            remaining -= m.target;
        }
        for (CreditAccount m : accounts) {
            if (remaining > 0 && counted.contains(m) && m.target < m.window) {
                m.target++;
                remaining--;
            }
        }
    }
}
