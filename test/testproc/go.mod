module github.com/apfproject/apf/test/testproc

go 1.26.8
