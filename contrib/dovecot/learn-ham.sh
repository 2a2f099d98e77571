#!/bin/sh
# Dovecot IMAPSieve: a message moved out of Junk (to any folder but Trash) is learned as ham
# for its user; learning it as ham after it was learned as spam counts it in both classes, so
# the spam learn is forgotten first (spamc -L forget; "already un/learned" when it never was).
# NBTEXT_SPAMC_ARGS may name the daemon (-d HOST -p PORT, or -U SOCKET); spamc's defaults otherwise.
message=$(mktemp) || exit 75
trap 'rm -f "$message"' EXIT
cat > "$message"
/usr/bin/spamc ${NBTEXT_SPAMC_ARGS} -u "$1" -L forget < "$message" > /dev/null
/usr/bin/spamc ${NBTEXT_SPAMC_ARGS} -u "$1" -L ham < "$message"
