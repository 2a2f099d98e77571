#!/bin/sh
# Dovecot IMAPSieve: a message moved into Junk is learned as spam for its user
# (imap_sieve's pipe: the message on stdin, the user as $1). docs/serve.md has the set-up.
# NBTEXT_SPAMC_ARGS may name the daemon (-d HOST -p PORT, or -U SOCKET); spamc's defaults otherwise.
exec /usr/bin/spamc ${NBTEXT_SPAMC_ARGS} -u "$1" -L spam
