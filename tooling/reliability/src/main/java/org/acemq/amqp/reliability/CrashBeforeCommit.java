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
 * The crash-mid-handler point of transactional mode: wraps the {@link DataSource} that
 * {@code JdbcTransactionalHandler} takes its connection from, so that {@link Connection#commit()} first halts the
 * process if {@link CrashPoint#MID_HANDLER} is armed for the message whose work ran on this thread. At that moment
 * the transaction holds the effect row and the store's confirm, both uncommitted: a crash there must leave neither.
 */
final class CrashBeforeCommit {

    /** The key whose transactional work last ran on this thread (set by the work, read by commit). */
    static final ThreadLocal<String> WORK_KEY = new ThreadLocal<>();

    private CrashBeforeCommit() {
    }

    static DataSource wrap(DataSource target, DataSource harnessDb, Map<CrashPoint, Set<String>> crashes,
            String consumerId) {
        InvocationHandler connections = (proxy, method, args) -> {
            Object result = invoke(target, method, args);
            return result instanceof Connection c && method.getName().equals("getConnection")
                    ? connection(c, harnessDb, crashes, consumerId) : result;
        };
        return (DataSource) Proxy.newProxyInstance(CrashBeforeCommit.class.getClassLoader(),
                new Class<?>[] {DataSource.class}, connections);
    }

    private static Connection connection(Connection target, DataSource harnessDb,
            Map<CrashPoint, Set<String>> crashes, String consumerId) {
        InvocationHandler commits = (proxy, method, args) -> {
            if (method.getName().equals("commit") && method.getParameterCount() == 0) {
                String key = WORK_KEY.get();
                WORK_KEY.remove();
                CrashPointStore.maybeCrash(crashes, harnessDb, CrashPoint.MID_HANDLER, key, consumerId);
            }
            return invoke(target, method, args);
        };
        return (Connection) Proxy.newProxyInstance(CrashBeforeCommit.class.getClassLoader(),
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
