package org.acemq.amqp.store.jdbc.internal;

import java.util.Objects;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A validated table name, safe to paste into SQL. Table names cannot be JDBC parameters, so the name is checked
 * against a strict pattern instead: lowercase letters, digits and underscores, optionally qualified by a schema.
 * Quotes, semicolons, spaces and everything else are rejected; the SQL text quotes the parts anyway, so reserved
 * words such as {@code user} work too.
 *
 * @param schema the schema, or null for the connection's {@code search_path}
 * @param name the unqualified name
 */
public record TableName(String schema, String name) {

    /** Longest unqualified name: leaves room for the longest derived name, {@code <name>_expires_at_idx}, in 63. */
    public static final int MAX_NAME_LENGTH = 48;

    private static final Pattern PATTERN = Pattern.compile(
            "(?:([a-z_][a-z0-9_]{0,62})\\.)?([a-z_][a-z0-9_]{0," + (MAX_NAME_LENGTH - 1) + "})");

    /** Validates the parts. */
    public TableName {
        Objects.requireNonNull(name, "name");
    }

    /**
     * @param value {@code name} or {@code schema.name}
     * @return the parsed name
     * @throws NullPointerException if {@code value} is null
     * @throws IllegalArgumentException if it does not match the pattern
     */
    public static TableName parse(String value) {
        Objects.requireNonNull(value, "tableName must not be null");
        Matcher m = PATTERN.matcher(value);
        if (!m.matches()) {
            throw new IllegalArgumentException("tableName must be [schema.]name made of lowercase letters, digits and "
                    + "underscores, not starting with a digit (schema at most 63 characters, name at most "
                    + MAX_NAME_LENGTH + "), but was '" + value + "'");
        }
        return new TableName(m.group(1), m.group(2));
    }

    /** @return the name as SQL: {@code "schema"."name"} or {@code "name"} */
    public String sql() {
        return schema == null ? '"' + name + '"' : '"' + schema + "\".\"" + name + '"';
    }

    /**
     * @param quote the dialect's identifier quote, {@code "} or {@code `}
     * @return the name as SQL with that quote
     */
    public String sql(char quote) {
        return schema == null ? quote + name + quote : "" + quote + schema + quote + '.' + quote + name + quote;
    }

    @Override
    public String toString() {
        return schema == null ? name : schema + "." + name;
    }
}
