# make demo   install everything, then anonymise the bundled Titanic data and print the report
# make check  install everything, test the set-up script, then R CMD build + R CMD check --as-cran
#             + the test count line
# make sanitize  ASan/UBSan, no-OpenMP and valgrind runs of the native code (CI runs it too)
# make test   run the test suite against the installed package (quick, for development)
R        ?= R
PKG      := detanon
VERSION  := $(shell sed -n 's/^Version: *//p' DESCRIPTION)
CHECKDIR ?= $(CURDIR)/check

# NOT_CRAN=true runs the whole suite (snapshot tests included). R CMD check --as-cran also asks
# the network for things this machine cannot reach (a time server, URL checks), which would
# only add NOTEs unrelated to the package; R_RD4PDF avoids the inconsolata font package.
CHECK_ENV := NOT_CRAN=true _R_CHECK_SYSTEM_CLOCK_=false _R_CHECK_CRAN_INCOMING_REMOTE_=false \
             R_RD4PDF="times,hyper"

.PHONY: deps install demo check test-setup sanitize test clean

deps:
	bash tools/install-deps.sh

install: deps
	$(R) CMD INSTALL --preclean --clean .

demo: install
	Rscript inst/scripts/titanic-report.R

# The set-up path itself, against stub apt/dpkg commands (a fresh machine, a partial one, a full one).
test-setup:
	bash tests/setup/test-install-deps.sh

check: deps test-setup
	rm -rf "$(CHECKDIR)" && mkdir -p "$(CHECKDIR)"
	cd "$(CHECKDIR)" && $(R) CMD build "$(CURDIR)"
	cd "$(CHECKDIR)" && $(CHECK_ENV) $(R) CMD check --as-cran $(PKG)_$(VERSION).tar.gz; \
	  status=$$?; bash "$(CURDIR)/tools/check-summary.sh" "$(CHECKDIR)/$(PKG).Rcheck" $$status

sanitize: deps
	bash tools/sanitize.sh

test:
	NOT_CRAN=true Rscript -e 'testthat::test_dir("tests/testthat", package = "$(PKG)", load_package = "installed")'

clean:
	rm -rf "$(CHECKDIR)" src/*.o src/*.so
