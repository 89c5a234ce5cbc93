package org.acemq.amqp.store.jdbc;

import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import javax.sql.DataSource;

/**
 * Reads the maximum size of a connection pool, for the group commit's default: as many statements may run at once as
 * the pool has connections. Read reflectively, by the getter names of the common pools, so that no pool is a
 * dependency: HikariCP {@code getMaximumPoolSize}, Apache Commons DBCP 2 {@code getMaxTotal}, Tomcat JDBC
 * {@code getMaxActive}, c3p0 {@code getMaxPoolSize}.
 */
final class PoolSize {

    private static final String[] GETTERS = {"getMaximumPoolSize", "getMaxTotal", "getMaxActive", "getMaxPoolSize"};

    private PoolSize() {
    }

    /**
     * @param dataSource any DataSource
     * @param fallback what to answer when the size cannot be read, or is not a positive number
     * @return the pool's maximum size, or {@code fallback}
     */
    static int of(DataSource dataSource, int fallback) {
        for (String name : GETTERS) {
            try {
                Method getter = dataSource.getClass().getMethod(name);
                if (getter.getReturnType() == int.class && Modifier.isPublic(getter.getDeclaringClass().getModifiers())) {
                    int size = (Integer) getter.invoke(dataSource);
                    return size > 0 ? size : fallback;
                }
            } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
                // not this pool's getter, or not readable: try the next name
            }
        }
        return fallback;
    }
}
