package org.acemq.amqp.reliability;

import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.util.Map;
import java.util.Set;

import javax.sql.DataSource;

/**
 * Crash points at the commit of {@code JdbcTransactionalHandler}'s transaction: wraps the {@link DataSource} the
 * handler takes its connection from, so that {@link Connection#commit()} crashes the process for the message whose
 * work ran on this thread (the work names it in {@link #WORK_KEY}):
 * <ul>
 *   <li>{@link #beforeCommit}: {@link CrashPoint#MID_HANDLER}, before the commit. The transaction holds the work's
 *       rows and the store's confirm, both uncommitted: a crash there must leave neither. The same wrapper crashes
 *       at {@link CrashPoint#AFTER_CONFIRM} once the commit returned: the confirm is in that commit, and the runtime
 *       does not confirm a second time.</li>
 *   <li>{@link #afterCommit}: {@link CrashPoint#AFTER_COMMIT}, once the commit returned. The work's rows, the confirm
 *       and the outbox rows of the messages the handler sent are committed, nothing is dispatched yet and the
 *       incoming message is not settled: the messages must still go out, once as their receiver sees them.</li>
 * </ul>
 */
final class CommitCrash {

    /** The key whose transactional work last ran on this thread (set by the work, read by commit). */
    static final ThreadLocal<String> WORK_KEY = new ThreadLocal<>();

    private CommitCrash() {
    }

    /** @return {@code target}, crashing before the commit where {@link CrashPoint#MID_HANDLER} is armed */
    static DataSource beforeCommit(DataSource target, DataSource harnessDb, Map<CrashPoint, Set<String>> crashes,
            String consumerId) {
        return wrap(target, harnessDb, crashes, consumerId, CrashPoint.MID_HANDLER);
    }

    /** @return {@code target}, crashing after the commit where {@link CrashPoint#AFTER_COMMIT} is armed */
    static DataSource afterCommit(DataSource target, DataSource harnessDb, Map<CrashPoint, Set<String>> crashes,
            String consumerId) {
        return wrap(target, harnessDb, crashes, consumerId, CrashPoint.AFTER_COMMIT);
    }

    private static DataSource wrap(DataSource target, DataSource harnessDb, Map<CrashPoint, Set<String>> crashes,
            String consumerId, CrashPoint point) {
        InvocationHandler connections = (proxy, method, args) -> {
            Object result = invoke(target, method, args);
            return result instanceof Connection c && method.getName().equals("getConnection")
                    ? connection(c, harnessDb, crashes, consumerId, point) : result;
        };
        return (DataSource) Proxy.newProxyInstance(CommitCrash.class.getClassLoader(),
                new Class<?>[] {DataSource.class}, connections);
    }

    private static Connection connection(Connection target, DataSource harnessDb,
            Map<CrashPoint, Set<String>> crashes, String consumerId, CrashPoint point) {
        InvocationHandler commits = (proxy, method, args) -> {
            if (!method.getName().equals("commit") || method.getParameterCount() != 0) {
                return invoke(target, method, args);
            }
            String key = WORK_KEY.get();
            WORK_KEY.remove();
            if (point == CrashPoint.AFTER_COMMIT) {
                Object result = invoke(target, method, args);
                CrashPointStore.maybeCrash(crashes, harnessDb, point, key, consumerId);
                return result;
            }
            CrashPointStore.maybeCrash(crashes, harnessDb, point, key, consumerId);
            Object result = invoke(target, method, args);
            // the store's confirm was in this transaction: the runtime does not confirm again, so "after the
            // confirm" is here, once it committed and before the delivery is settled
            CrashPointStore.maybeCrash(crashes, harnessDb, CrashPoint.AFTER_CONFIRM, key, consumerId);
            return result;
        };
        return (Connection) Proxy.newProxyInstance(CommitCrash.class.getClassLoader(),
                new Class<?>[] {Connection.class}, commits);
    }

    private static Object invoke(Object target, Method method, Object[] args) throws Throwable {
        try {
            return method.invoke(target, args);
        } catch (InvocationTargetException e) {
            throw e.getCause();
        }
    }
}
