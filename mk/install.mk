# SPDX-License-Identifier: GPL-2.0
# make install, make uninstall: rowgated and rowgate-meta in $(SBINDIR),
# rowgatectl in $(BINDIR), their man pages (man/), the systemd units and
# their /etc/default files (systemd/), under $(DESTDIR) when a package
# stages them.  install builds the three binaries when they are missing or
# stale and nothing else; it neither enables nor starts a unit.
#
#   make && make install                            # under /usr/local
#   make install PREFIX=/usr DESTDIR=debian/rowgate
#   make CPPFLAGS="$(dpkg-buildflags --get CPPFLAGS)" \
#        CFLAGS="$(dpkg-buildflags --get CFLAGS)" \
#        LDFLAGS="$(dpkg-buildflags --get LDFLAGS)"

# A distribution's flags come after ours, so they add hardening and may
# override -O2; BPF objects take none of them.  LDFLAGS goes on the links
# of the three installed binaries (mk/rowgated.mk, rowgatectl.mk, meta.mk).
USER_CFLAGS += $(CPPFLAGS) $(CFLAGS)

PREFIX  ?= /usr/local
BINDIR  ?= $(PREFIX)/bin
SBINDIR ?= $(PREFIX)/sbin
MANDIR  ?= $(PREFIX)/share/man
# Where systemd looks: /lib/systemd/system for the distribution's own
# units (Debian 12; the same directory as /usr/lib/systemd/system on a
# merged /usr), $(PREFIX)/lib/systemd/system for /usr/local's.
ifeq ($(PREFIX),/usr)
UNITDIR ?= /lib/systemd/system
else
UNITDIR ?= $(PREFIX)/lib/systemd/system
endif
# The units read /etc/default/NAME, whatever PREFIX is.
DEFAULTDIR ?= /etc/default
INSTALL    ?= install

RG_INST_SBIN  := rowgated rowgate-meta
RG_INST_BIN   := rowgatectl
RG_INST_UNITS := rowgated rowgate-meta
RG_INST_MAN8  := rowgated rowgatectl rowgate-meta

.PHONY: install uninstall

install: $(addprefix $(BUILD)/,$(RG_INST_SBIN) $(RG_INST_BIN))
	$(call msg,INSTALL,$(DESTDIR)$(PREFIX))
	$(Q)$(INSTALL) -d "$(DESTDIR)$(SBINDIR)" "$(DESTDIR)$(BINDIR)" "$(DESTDIR)$(MANDIR)/man8" \
		"$(DESTDIR)$(UNITDIR)" "$(DESTDIR)$(DEFAULTDIR)"
	$(Q)$(INSTALL) -m 0755 $(RG_INST_SBIN:%=$(BUILD)/%) "$(DESTDIR)$(SBINDIR)/"
	$(Q)$(INSTALL) -m 0755 $(RG_INST_BIN:%=$(BUILD)/%) "$(DESTDIR)$(BINDIR)/"
	$(Q)$(INSTALL) -m 0644 $(RG_INST_MAN8:%=man/%.8) "$(DESTDIR)$(MANDIR)/man8/"
	$(Q)for u in $(RG_INST_UNITS); do \
		sed 's|@SBINDIR@|$(SBINDIR)|g' systemd/$$u.service.in \
			>"$(DESTDIR)$(UNITDIR)/$$u.service" && \
		chmod 0644 "$(DESTDIR)$(UNITDIR)/$$u.service" || exit 1; \
	done
	@# an administrator's options are never overwritten
	$(Q)for u in $(RG_INST_UNITS); do \
		f="$(DESTDIR)$(DEFAULTDIR)/$$u"; \
		if [ -e "$$f" ]; then \
			echo "  kept     $$f (the shipped one: systemd/$$u.default)"; \
		else \
			$(INSTALL) -m 0644 systemd/$$u.default "$$f" || exit 1; \
		fi; \
	done

uninstall:
	$(call msg,UNINSTALL,$(DESTDIR)$(PREFIX))
	$(Q)rm -f $(RG_INST_SBIN:%="$(DESTDIR)$(SBINDIR)/%") $(RG_INST_BIN:%="$(DESTDIR)$(BINDIR)/%") \
		$(RG_INST_MAN8:%="$(DESTDIR)$(MANDIR)/man8/%.8") \
		$(RG_INST_UNITS:%="$(DESTDIR)$(UNITDIR)/%.service")
	@# options the administrator changed stay
	$(Q)for u in $(RG_INST_UNITS); do \
		f="$(DESTDIR)$(DEFAULTDIR)/$$u"; \
		if cmp -s systemd/$$u.default "$$f"; then \
			rm -f "$$f"; \
		elif [ -e "$$f" ]; then \
			echo "  kept     $$f (changed from systemd/$$u.default)"; \
		fi; \
	done
